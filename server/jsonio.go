package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
)

// decodeBody reads a JSON object into v. An empty body decodes as {}. Unknown fields, wrong
// types and syntax errors come back as invalid_argument naming the field (or "body").
func decodeBody(r *http.Request, v any) error {
	buf := getBuffer()
	defer putBuffer(buf)
	if _, err := buf.ReadFrom(r.Body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return invalidArg("body", "could not read the request body: %v", err)
	}
	data := buf.Bytes()
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	if fd, ok := v.(fastDecoder); ok && fd.decodeFast(data) {
		return nil
	}
	return decodeJSON(data, v)
}

// decodeJSON is decodeBody's general path, with encoding/json. The decoder copies what it keeps
// (strings, RawMessage), so data may be reused afterwards.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return invalidArg("body", "unexpected data after the JSON object")
	}
	return nil
}

// buffers are the request and response body buffers, reused across requests.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer keeps the buffer of a rare huge body from staying in the pool.
const maxPooledBuffer = 64 << 10

func getBuffer() *bytes.Buffer {
	b := buffers.Get().(*bytes.Buffer) //nolint:forcetypeassert // the pool holds only buffers
	b.Reset()
	return b
}

func putBuffer(b *bytes.Buffer) {
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
		field := strings.TrimPrefix(typeErr.Field, "publishJob.") // the embedded single job of a publish
		if field == "" {
			return invalidArg("body", "want a JSON object, got %s", typeErr.Value)
		}
		return invalidArg(field, "want %s, got %s", typeName(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return invalidArg("body", "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalidArg(name, "unknown field")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalidArg("body", "truncated JSON")
	default:
		return invalidArg("body", "%v", err)
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

// maxSeconds bounds every duration in a request (about 31 years).
const maxSeconds = 1e9

// seconds converts an optional number of seconds (fractions allowed) to a duration; nil is 0.
func seconds(field string, v *float64) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	f := *v
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxSeconds {
		return 0, invalidArg(field, "%v is not a number of seconds between 0 and %g", f, float64(maxSeconds))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// secondsOf renders a duration as seconds for responses.
func secondsOf(d time.Duration) float64 { return d.Seconds() }

// prefixed puts a batch prefix before a field name ("jobs[2]" + "priority").
func prefixed(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return fmt.Sprintf("%s.%s", prefix, field)
}
