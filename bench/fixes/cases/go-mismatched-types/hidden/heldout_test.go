package cart

import "testing"

func TestHeldOut(t *testing.T) {
	if got := Total(nil); got != 0 {
		t.Fatalf("Total(nil) = %v", got)
	}
}
