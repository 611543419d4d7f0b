package cart

import "testing"

func TestTotal(t *testing.T) {
	got := Total([]Item{{Price: 1.5, Quantity: 2}, {Price: 0.25, Quantity: 4}})
	if got != 4.0 {
		t.Fatalf("Total = %v, want 4", got)
	}
}
