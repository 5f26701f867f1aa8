package cache

import (
	"encoding/json"
	"unicode/utf8"
)

// Codec turns values into bytes and back. Implementations must be safe for concurrent use.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON is the default Codec (encoding/json).
type JSON struct{}

var _ Codec = JSON{}

// Marshal encodes v as JSON.
func (JSON) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal decodes JSON data into v. A plain JSON string (no escapes) decoded into a *string
// takes a fast path that gives the same result as encoding/json without its reflection.
func (JSON) Unmarshal(data []byte, v any) error {
	if p, ok := v.(*string); ok && plainJSONString(data) {
		*p = string(data[1 : len(data)-1])
		return nil
	}
	return json.Unmarshal(data, v)
}

// plainJSONString reports whether data is a JSON string literal with no escape sequences or
// control characters and valid UTF-8, whose value is the bytes between the quotes.
func plainJSONString[T string | []byte](data T) bool {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return false
	}
	inner := data[1 : len(data)-1]
	for i := range len(inner) {
		if c := inner[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.ValidString(string(inner))
}
