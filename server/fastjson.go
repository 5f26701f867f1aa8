package server

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The hot job requests (publish one job, consume, ack) are decoded here without reflection when
// their body is plain: known member names without escapes, each at most once, values of the
// field's own JSON type, no nulls. Anything else (and every mistake) goes to encoding/json in
// decodeBody, which gives the same result for what the fast path accepts and names the field in
// its errors. fastjson_test.go checks that equivalence on many generated and mutated bodies.

// fastDecoder is a request type with a fast path; decode reports false to fall back.
type fastDecoder interface {
	decodeFast(data []byte) bool
}

// members calls member for each member of the JSON object data, which must be the whole input
// (surrounding whitespace allowed). It returns false, having maybe called member for some members,
// when data is not an object it can walk simply or when member returns false. Values are
// delimited, not validated: each member's decoder checks its own value.
func members(data []byte, member func(name string, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		name, next, ok := plainString(data, i)
		if !ok {
			return false
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		end, ok := skipValue(data, i, 0)
		if !ok || !member(name, data[i:end]) {
			return false
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainString reads a JSON string at data[i] that needs no unescaping: no backslash, no control
// character, valid UTF-8. It returns the string and the index after its closing quote.
func plainString(data []byte, i int) (string, int, bool) {
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	start := i + 1
	ascii := true
	for j := start; j < len(data); j++ {
		c := data[j]
		switch {
		case c == '"':
			s := data[start:j]
			if !ascii && !utf8.Valid(s) {
				return "", 0, false // encoding/json would replace the bad bytes
			}
			return string(s), j + 1, true
		case c == '\\' || c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", 0, false
}

// maxFastDepth bounds the nesting skipValue follows; deeper values take the slow path.
const maxFastDepth = 64

// skipValue returns the index just after the JSON value starting at data[i]. It tracks strings
// (with escapes) and nesting only; the caller validates what it keeps.
func skipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) || depth > maxFastDepth {
		return 0, false
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, true
			}
		}
		return 0, false
	case '{', '[':
		closing := byte('}')
		if data[i] == '[' {
			closing = ']'
		}
		j := skipSpace(data, i+1)
		if j < len(data) && data[j] == closing {
			return j + 1, true
		}
		for {
			end, ok := skipValue(data, j, depth+1)
			if !ok {
				return 0, false
			}
			j = skipSpace(data, end)
			if j >= len(data) {
				return 0, false
			}
			switch data[j] {
			case ',', ':':
				j = skipSpace(data, j+1)
			case closing:
				return j + 1, true
			default:
				return 0, false
			}
		}
	default:
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
				return j, j > i
			}
			j++
		}
		return j, j > i
	}
}

// fastInt reads a JSON integer that fits an int: -?(0|[1-9][0-9]*).
func fastInt(v []byte) (int, bool) {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil
}

// fastFloat reads a JSON number as encoding/json does (strconv.ParseFloat of its text).
func fastFloat(v []byte) (float64, bool) {
	if !isJSONNumber(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// isJSONNumber checks the JSON number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func isJSONNumber(v []byte) bool {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case i < len(v) && v[i] >= '1' && v[i] <= '9':
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(v) && v[i] == '.' {
		i++
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(v)
}

// fastString reads a whole value that is a plain string (see plainString).
func fastString(v []byte) (string, bool) {
	s, end, ok := plainString(v, 0)
	return s, ok && end == len(v)
}

// fastStrings reads an array of plain strings.
func fastStrings(v []byte) ([]string, bool) {
	if len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	out := []string{}
	i := skipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return out, i+1 == len(v)
	}
	for {
		s, next, ok := plainString(v, i)
		if !ok {
			return nil, false
		}
		out = append(out, s)
		i = skipSpace(v, next)
		if i >= len(v) {
			return nil, false
		}
		switch v[i] {
		case ',':
			i = skipSpace(v, i+1)
		case ']':
			return out, i+1 == len(v)
		default:
			return nil, false
		}
	}
}

// fastStringMap reads an object of plain strings (each name once).
func fastStringMap(v []byte) (map[string]string, bool) {
	out := map[string]string{}
	ok := members(v, func(name string, value []byte) bool {
		if _, dup := out[name]; dup {
			return false
		}
		s, ok := fastString(value)
		out[name] = s
		return ok
	})
	return out, ok
}

// fastRaw keeps any valid JSON value (not null: encoding/json leaves a RawMessage field's null as
// the text null, which the slow path handles).
func fastRaw(v []byte) (json.RawMessage, bool) {
	if bytes.Equal(v, []byte("null")) || !json.Valid(v) {
		return nil, false
	}
	return bytes.Clone(v), true
}

// seenFields remembers which members an object had, to refuse duplicates (the slow path decides
// what a repeated member means).
type seenFields uint32

func (s *seenFields) first(bit uint) bool {
	if *s&(1<<bit) != 0 {
		return false
	}
	*s |= 1 << bit
	return true
}

func (p *publishRequest) decodeFast(data []byte) bool {
	var seen seenFields
	var out publishRequest
	j := &out.publishJob
	ok := members(data, func(name string, v []byte) bool {
		var ok bool
		switch name {
		case "payload":
			j.Payload, ok = fastRaw(v)
			return ok && seen.first(0)
		case "payload_base64":
			var s string
			s, ok = fastString(v)
			j.PayloadBase64 = &s
			return ok && seen.first(1)
		case "priority":
			j.Priority, ok = intPtr(v)
			return ok && seen.first(2)
		case "delay":
			j.Delay, ok = floatPtr(v)
			return ok && seen.first(3)
		case "run_at":
			var s string
			s, ok = fastString(v)
			j.RunAt = &s
			return ok && seen.first(4)
		case "tries":
			j.Tries, ok = intPtr(v)
			return ok && seen.first(5)
		case "ttl":
			j.TTL, ok = floatPtr(v)
			return ok && seen.first(6)
		case "ttr":
			j.TTR, ok = floatPtr(v)
			return ok && seen.first(7)
		case "unique_key":
			var s string
			s, ok = fastString(v)
			j.UniqueKey = &s
			return ok && seen.first(8)
		case "unique_for":
			j.UniqueFor, ok = floatPtr(v)
			return ok && seen.first(9)
		case "attributes":
			j.Attributes, ok = fastStringMap(v)
			return ok && seen.first(10)
		default: // backoff, jobs (batches), unknown members: the slow path
			return false
		}
	})
	if ok {
		*p = out
	}
	return ok
}

func (c *consumeRequest) decodeFast(data []byte) bool {
	var seen seenFields
	var out consumeRequest
	ok := members(data, func(name string, v []byte) bool {
		var ok bool
		switch name {
		case "queues":
			out.Queues, ok = fastStrings(v)
			return ok && seen.first(0)
		case "count":
			out.Count, ok = intPtr(v)
			return ok && seen.first(1)
		case "ttr":
			out.TTR, ok = floatPtr(v)
			return ok && seen.first(2)
		case "timeout":
			out.Timeout, ok = floatPtr(v)
			return ok && seen.first(3)
		default:
			return false
		}
	})
	if ok {
		*c = out
	}
	return ok
}

func (a *ackRequest) decodeFast(data []byte) bool {
	var seen seenFields
	var out ackRequest
	ok := members(data, func(name string, v []byte) bool {
		var ok bool
		switch name {
		case "delivery":
			out.Delivery, ok = intPtr(v)
			return ok && seen.first(0)
		case "result":
			out.Result, ok = fastRaw(v)
			return ok && seen.first(1)
		default: // result_base64, unknown members: the slow path
			return false
		}
	})
	if ok {
		*a = out
	}
	return ok
}

func intPtr(v []byte) (*int, bool) {
	n, ok := fastInt(v)
	return &n, ok
}

func floatPtr(v []byte) (*float64, bool) {
	f, ok := fastFloat(v)
	return &f, ok
}
