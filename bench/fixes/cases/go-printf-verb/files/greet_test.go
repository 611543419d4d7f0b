package greet

import "testing"

func TestGreeting(t *testing.T) {
	if got := Greeting("ada", 3); got != "hello ada (3)" {
		t.Fatalf("Greeting = %q", got)
	}
}
