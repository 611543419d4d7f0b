package counter

import "testing"

func TestHeldOut(t *testing.T) {
	c := &Counter{}
	if c.Count("x") != 0 {
		t.Fatal("empty counter")
	}
	c.Add("x")
	if c.Count("x") != 1 || c.Count("y") != 0 {
		t.Fatal("counts")
	}
}
