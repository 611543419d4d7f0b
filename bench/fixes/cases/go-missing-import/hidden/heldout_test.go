package label

import "testing"

func TestHeldOut(t *testing.T) {
	if got := Label("x", -12); got != "X--12" {
		t.Fatalf("Label = %q", got)
	}
}
