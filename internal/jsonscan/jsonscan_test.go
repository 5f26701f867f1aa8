package jsonscan

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestElementsAndMembers: the walkers see the same elements and members encoding/json does, and
// refuse what is not one whole array or object.
func TestElementsAndMembers(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`[]`, ` [ 1 , "a\"]" , {"k": [2]} , null ] `, `[[],[[]]]`} {
		var got []string
		if !Elements([]byte(body), func(v []byte) bool { got = append(got, string(v)); return true }) {
			t.Fatalf("Elements refused %s", body)
		}
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d elements, encoding/json %d", body, len(got), len(want))
		}
		for i := range got {
			if got[i] != string(want[i]) {
				t.Fatalf("%s: element %d is %s, encoding/json %s", body, i, got[i], want[i])
			}
		}
	}
	for _, body := range []string{``, `[`, `[1,]`, `[1 2]`, `[1] x`, `{}`} {
		if Elements([]byte(body), func([]byte) bool { return true }) {
			t.Fatalf("Elements accepted %q", body)
		}
	}
	got := map[string]string{}
	ok := Members([]byte(`{"a": 1, "b" : {"c": "}"}, "d":[]}`), func(name string, v []byte) bool {
		got[name] = string(v)
		return true
	})
	if want := map[string]string{"a": "1", "b": `{"c": "}"}`, "d": "[]"}; !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("Members: %v %v", ok, got)
	}
	for _, body := range []string{`{"a"}`, `{"a":1,}`, `{a:1}`, `{"a":1} {}`, `{"a\n":1}`} {
		if Members([]byte(body), func(string, []byte) bool { return true }) {
			t.Fatalf("Members accepted %q", body)
		}
	}
}

func TestNumbers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in string
		ok bool
	}{{"0", true}, {"-0", true}, {"12", true}, {"1.5e-3", true}, {"01", false}, {"1.", false}, {".5", false},
		{"1e", false}, {"-", false}, {"+1", false}, {"1e+9", true}} {
		if IsNumber([]byte(c.in)) != c.ok {
			t.Fatalf("IsNumber(%s) = %v", c.in, !c.ok)
		}
		var f float64
		if err := json.Unmarshal([]byte(c.in), &f); (err == nil) != c.ok {
			t.Fatalf("encoding/json disagrees on %s: %v", c.in, err)
		}
	}
}
