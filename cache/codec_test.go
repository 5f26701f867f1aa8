package cache

import (
	"encoding/json"
	"testing"
)

func TestJSONStringFastPathMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`"plain"`, `""`, `"héllo ✓"`, `"a\"b"`, `"tab\there"`, `"\u00e9"`, `"bad` + "\xff" + `"`,
		`"x"  `, `42`, `"unterminated`, `null`, `"<&>"`,
	} {
		var want, got string
		werr := json.Unmarshal([]byte(in), &want)
		gerr := JSON{}.Unmarshal([]byte(in), &got)
		if (werr == nil) != (gerr == nil) || got != want {
			t.Errorf("Unmarshal(%q) = %q, %v; encoding/json gives %q, %v", in, got, gerr, want, werr)
		}
	}
}
