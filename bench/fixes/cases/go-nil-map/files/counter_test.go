package counter

import "testing"

func TestZeroValueCounter(t *testing.T) {
	var c Counter
	c.Add("go")
	c.Add("go")
	if got := c.Count("go"); got != 2 {
		t.Fatalf("Count = %d, want 2", got)
	}
}
