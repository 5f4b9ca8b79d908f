package textdist

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"l4", "", 2}, {"", "l4", 2}, {"kitten", "sitting", 3}, {"v6e-8", "v6ex8", 1}, {"json", "jsno", 2}} {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
