package cache

import (
	"strconv"
	"strings"
)

// A cache key is one Redis string, the record, read with one plain GET on the hit path. Its
// encoding carries the value and everything a reader needs to decide hit, stale or locked from that
// reply alone:
//
//	<state>|<refresh_at>|<lock_until>|<owner>|<payload>
//
//	state       'v' a value, 'n' a "not found" marker, 'e' no value yet (only a lock)
//	refresh_at  Redis time (ms) from which a reader starts one background reload; 0 never;
//	            1 (staleMark) the value was deleted in eventual mode and must be reloaded now
//	lock_until  Redis time (ms) until which owner holds the load lock; 0 unlocked
//	owner       random token of the load that holds the lock; a write-back is accepted only while
//	            the record still names its token, and Delete clears it (the fence)
//	payload     the codec's bytes of the value ('v' only)
//
// The Lua scripts in lua/ write records; this file only reads them.

const (
	stateValue    = 'v'
	stateNotFound = 'n'
	stateEmpty    = 'e'

	// staleMark in refresh_at marks a value deleted in eventual mode.
	staleMark = 1
)

type record struct {
	state     byte
	refreshAt int64
	lockUntil int64
	owner     string
	payload   string
}

// hasValue reports whether the record carries a value or a not-found marker.
func (r record) hasValue() bool { return r.state == stateValue || r.state == stateNotFound }

// stale reports whether the record's value was deleted (eventual mode) and awaits its reload.
func (r record) stale() bool { return r.refreshAt == staleMark }

// decodeRecord parses a record. ok is false for anything that is not a record.
func decodeRecord(s string) (r record, ok bool) {
	if len(s) < 7 || s[1] != '|' {
		return record{}, false
	}
	r.state = s[0]
	if r.state != stateValue && r.state != stateNotFound && r.state != stateEmpty {
		return record{}, false
	}
	rest := s[2:]
	var field string
	if field, rest, ok = strings.Cut(rest, "|"); !ok {
		return record{}, false
	}
	var err error
	if r.refreshAt, err = strconv.ParseInt(field, 10, 64); err != nil {
		return record{}, false
	}
	if field, rest, ok = strings.Cut(rest, "|"); !ok {
		return record{}, false
	}
	if r.lockUntil, err = strconv.ParseInt(field, 10, 64); err != nil {
		return record{}, false
	}
	if r.owner, r.payload, ok = strings.Cut(rest, "|"); !ok {
		return record{}, false
	}
	return r, true
}

// encode renders the record (tests and tools; the scripts write records in production).
func (r record) encode() string {
	return string(r.state) + "|" + strconv.FormatInt(r.refreshAt, 10) + "|" +
		strconv.FormatInt(r.lockUntil, 10) + "|" + r.owner + "|" + r.payload
}
