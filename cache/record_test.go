package cache

import "testing"

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for _, r := range []record{
		{state: stateValue, refreshAt: 1763700000123, payload: `{"a":"x|y"}`},
		{state: stateNotFound},
		{state: stateEmpty, lockUntil: 1763700000999, owner: "3k9z"},
		{state: stateValue, refreshAt: staleMark, lockUntil: 5, owner: "o", payload: "||"},
	} {
		got, ok := decodeRecord(r.encode())
		if !ok || got != r {
			t.Errorf("decode(encode(%+v)) = %+v, %v", r, got, ok)
		}
	}
	for _, bad := range []string{"", "plain value", "x|0|0||", "v|a|0||", "v|0|b||", "v|0|0|", "v0|0||"} {
		if _, ok := decodeRecord(bad); ok {
			t.Errorf("decodeRecord(%q) accepted", bad)
		}
	}
}

// Script tests: seed raw records, call the wrapper, read the raw state back.
