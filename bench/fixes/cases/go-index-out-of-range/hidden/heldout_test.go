package sum

import "testing"

func TestHeldOut(t *testing.T) {
	if got := Sum(nil); got != 0 {
		t.Fatalf("Sum(nil) = %d", got)
	}
	if got := Sum([]int{5}); got != 5 {
		t.Fatalf("Sum([5]) = %d", got)
	}
}
