// Package jsonscan reads plain JSON without reflection: objects walked member by member,
// strings without escapes, integers and numbers, arrays of strings. Every function reports false
// for anything it does not handle simply, and the caller then uses encoding/json, which is the
// reference: what these functions accept, they read exactly as encoding/json does (the server's
// tests check that on generated, mutated and fuzzed bodies). It serves the hot paths of the server
// and of the load generator.
package jsonscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Members calls member for each member of the JSON object data, which must be the whole input
// (surrounding whitespace allowed). It returns false, having maybe called member for some members,
// when data is not an object it can walk simply or when member returns false. Values are
// delimited, not validated: each member's decoder checks its own value.
func Members(data []byte, member func(name string, value []byte) bool) bool {
	return walk(data, '{', '}', func(i int) (int, bool) {
		name, next, ok := PlainString(data, i)
		if !ok {
			return 0, false
		}
		i = skipSpace(data, next)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		i = skipSpace(data, i+1)
		end, ok := SkipValue(data, i, 0)
		return end, ok && member(name, data[i:end])
	})
}

// walk reads the container that is the whole of data (surrounding whitespace allowed), opened by
// open and closed by end, calling item at the start of each item; item returns the index after it.
func walk(data []byte, open, end byte, item func(i int) (int, bool)) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != open {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == end {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		next, ok := item(i)
		if !ok {
			return false
		}
		i = skipSpace(data, next)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case end:
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

// PlainString reads a JSON string at data[i] that needs no unescaping: no backslash, no control
// character, valid UTF-8. It returns the string and the index after its closing quote.
func PlainString(data []byte, i int) (string, int, bool) {
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

// maxDepth bounds the nesting SkipValue follows; deeper values are left to encoding/json.
const maxDepth = 64

// SkipValue returns the index just after the JSON value starting at data[i]. It tracks strings
// (with escapes) and nesting only; the caller validates what it keeps.
func SkipValue(data []byte, i, depth int) (int, bool) {
	if i >= len(data) || depth > maxDepth {
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
			end, ok := SkipValue(data, j, depth+1)
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

// Int reads a JSON integer that fits an int: -?(0|[1-9][0-9]*).
func Int(v []byte) (int, bool) {
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

// Float reads a JSON number as encoding/json does (strconv.ParseFloat of its text).
func Float(v []byte) (float64, bool) {
	if !IsNumber(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// IsNumber checks the JSON number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func IsNumber(v []byte) bool {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case i < len(v) && v[i] >= '1' && v[i] <= '9':
		i = skipDigits(v, i)
	default:
		return false
	}
	if i < len(v) && v[i] == '.' {
		start := i + 1
		if i = skipDigits(v, start); i == start {
			return false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		start := i
		if i = skipDigits(v, start); i == start {
			return false
		}
	}
	return i == len(v)
}

// skipDigits returns the index of the first byte at or after i that is not a decimal digit.
func skipDigits(v []byte, i int) int {
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	return i
}

// String reads a whole value that is a plain string (see PlainString).
func String(v []byte) (string, bool) {
	s, end, ok := PlainString(v, 0)
	return s, ok && end == len(v)
}

// Strings reads an array of plain strings.
func Strings(v []byte) ([]string, bool) {
	out := []string{}
	ok := Elements(v, func(e []byte) bool {
		s, ok := String(e)
		out = append(out, s)
		return ok
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// StringMap reads an object of plain strings (each name once).
func StringMap(v []byte) (map[string]string, bool) {
	out := map[string]string{}
	ok := Members(v, func(name string, value []byte) bool {
		if _, dup := out[name]; dup {
			return false
		}
		s, ok := String(value)
		out[name] = s
		return ok
	})
	return out, ok
}

// Raw keeps any valid JSON value (not null: encoding/json leaves a RawMessage field's null as
// the text null, which the slow path handles).
func Raw(v []byte) (json.RawMessage, bool) {
	if bytes.Equal(v, []byte("null")) || !json.Valid(v) {
		return nil, false
	}
	return bytes.Clone(v), true
}

// Elements calls element for each element of the JSON array data (the whole input, surrounding
// whitespace allowed). Like Members, it delimits values without validating them.
func Elements(data []byte, element func(value []byte) bool) bool {
	return walk(data, '[', ']', func(i int) (int, bool) {
		end, ok := SkipValue(data, i, 0)
		return end, ok && element(data[i:end])
	})
}
