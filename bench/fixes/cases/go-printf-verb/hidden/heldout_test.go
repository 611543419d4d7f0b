package greet

import "testing"

func TestHeldOut(t *testing.T) {
	if got := Greeting("", 0); got != "hello  (0)" {
		t.Fatalf("Greeting = %q", got)
	}
}
