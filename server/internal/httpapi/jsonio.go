package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DecodeBody reads a JSON object into v. An empty body decodes as {}. Unknown fields, wrong
// types and syntax errors come back as invalid_argument naming the field (or "body").
func DecodeBody(r *http.Request, v any) error {
	buf := GetBuffer()
	defer PutBuffer(buf)
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return InvalidArg("body", "could not read the request body: %v", err)
	}
	data := buf.Bytes()
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if fd, ok := v.(FastDecoder); ok && fd.DecodeFast(data) {
		return nil
	}
	return DecodeJSON(data, v)
}

// FastDecoder is a request type with a reflection-free decoder for plain bodies; DecodeFast
// reports false to fall back to DecodeJSON, which must then give the same result.
type FastDecoder interface {
	DecodeFast(data []byte) bool
}

// DecodeJSON is DecodeBody's general path, with encoding/json. The decoder copies what it keeps
// (strings, RawMessage), so data may be reused afterwards.
func DecodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return InvalidArg("body", "unexpected data after the JSON object")
	}
	return nil
}

// buffers are the request and response body buffers, reused across requests.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps the buffer of a rare huge body from staying in the pool.
const maxPooledBuffer = 64 << 10

// GetBuffer takes an empty buffer from the pool.
func GetBuffer() *bytes.Buffer {
	b := buffers.Get().(*bytes.Buffer) //nolint:forcetypeassert // the pool holds only buffers
	b.Reset()
	return b
}

// FreeSpace grows buf to hold at least n more bytes and returns its free space, empty, for a
// reflection-free writer to append a whole answer to. Growing the pooled buffer itself, rather than
// only the slice appended to, keeps the capacity in the pool: answers then cost no allocation.
func FreeSpace(buf *bytes.Buffer, n int) []byte {
	buf.Grow(n)
	return buf.AvailableBuffer()
}

// PutBuffer returns a buffer to the pool.
func PutBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBuffer {
		buffers.Put(b)
	}
}

// jsonError names the field of a decoding error.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := strings.TrimPrefix(typeErr.Field, "publishJob.") // server/jobs: the single job a publish request embeds
		if field == "" {
			return InvalidArg("body", "want a JSON object, got %s", typeErr.Value)
		}
		return InvalidArg(field, "want %s, got %s", typeName(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return InvalidArg("body", "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return InvalidArg(name, "unknown field")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return InvalidArg("body", "truncated JSON")
	default:
		return InvalidArg("body", "%v", err)
	}
}

// typeName says what a Go type means to someone writing JSON.
func typeName(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"), t == "json.Number":
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["):
		return "an object"
	default:
		return "an object"
	}
}

// MaxSeconds bounds every duration in a request (about 31 years).
const MaxSeconds = 1e9

// Seconds converts an optional number of seconds (fractions allowed) to a duration; nil is 0.
func Seconds(field string, v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	f := *v
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > MaxSeconds {
		return 0, InvalidArg(field, "%v is not a number of seconds between 0 and %g", f, float64(MaxSeconds))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// WriteJSON writes v as the JSON body with status. The body is encoded into a pooled buffer
// first, so it goes out in one write with its Content-Length, and a value that cannot be encoded
// is a clean 500 rather than half a body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	buf := GetBuffer()
	defer PutBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "internal error: response could not be encoded", http.StatusInternalServerError)
		return
	}
	WriteBody(w, status, "application/json", buf.Bytes())
}

// WriteBody writes a complete body with its Content-Type and Content-Length.
func WriteBody(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// AppendJSONString appends s as a JSON string, as WriteJSON encodes it (HTML escaping off), for
// the reflection-free writers of hot answers. Plain ASCII is copied; anything that needs escaping
// or UTF-8 care goes through encoding/json.
func AppendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(out.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendJSONStringMap appends m as WriteJSON encodes it: keys sorted, nil as null.
func AppendJSONStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		b = AppendJSONString(b, m[k])
	}
	return append(b, '}')
}
