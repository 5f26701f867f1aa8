package sluice

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxEcho is how many bytes of one input an error message quotes back. A refused 1 MB queue name
// is answered with its first MaxEcho bytes and a marker saying how long it was, so an error body
// stays small whatever a client sends.
const MaxEcho = 200

// Shorten returns s when it is at most MaxEcho bytes, else its first MaxEcho bytes (cut on a rune
// boundary) followed by "…(N bytes)". Error messages that quote an input quote Shorten(input).
func Shorten(s string) string {
	if len(s) <= MaxEcho {
		return s
	}
	cut := MaxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// shortenArgs returns args with every string and byte slice shortened (Shorten), for the
// formatted messages of refused inputs.
func shortenArgs(args []any) []any {
	out, copied := args, false
	for i, a := range args {
		var s string
		switch v := a.(type) {
		case string:
			s = v
		case []byte:
			s = string(v)
		default:
			continue
		}
		if len(s) <= MaxEcho {
			continue
		}
		if !copied {
			out, copied = append([]any(nil), args...), true
		}
		out[i] = Shorten(s)
	}
	return out
}

// Sprintf is fmt.Sprintf with every string and byte slice argument shortened (Shorten): the
// message of an error that quotes inputs.
func Sprintf(format string, args ...any) string {
	return fmt.Sprintf(format, shortenArgs(args)...)
}
