package label

import "testing"

func TestLabel(t *testing.T) {
	if got := Label("build", 7); got != "BUILD-7" {
		t.Fatalf("Label = %q", got)
	}
}
