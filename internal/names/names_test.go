package names

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		want bool
	}{
		{"a", 1, true},
		{"Az09-_", 64, true},
		{"", 64, false},
		{"ab", 1, false},
		{strings.Repeat("x", 255), 255, true},
		{strings.Repeat("x", 256), 255, false},
		{"a b", 64, false},
		{"a:b", 64, false},
		{"a{b}", 64, false},
		{"é", 64, false},
		{"a.b", 64, false},
	} {
		if got := Valid(c.s, c.max); got != c.want {
			t.Errorf("Valid(%q, %d) = %v, want %v", c.s, c.max, got, c.want)
		}
	}
}
