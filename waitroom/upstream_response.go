package waitroom

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"strings"
)

// The upstream's plain answers are read without http.ReadResponse: a status line of HTTP/1.1, a
// header whose fields are all plain (no obs-fold, no control or non-ASCII byte), one
// Content-Length, no Transfer-Encoding or Trailer, a status with a body (not 1xx, 204 or 304) to
// a request that is not HEAD, and the whole header already in the connection's buffer. That is
// what a web server's keep-alive answers to a page or an asset look like, and reading them costs
// three allocations instead of a dozen. Anything else is left, nothing consumed, to
// http.ReadResponse, which reads it from its first byte as if this had not looked.

// leanResponse is an upstream connection's reusable response, body and header map. The map is
// only read while the answer is copied to the client (copyResponse moves its values, not the
// map), so the connection's next answer can reuse it; the values are fresh for each answer.
type leanResponse struct {
	res    http.Response
	body   leanBody
	header http.Header
}

// leanBody is a response body of a known length read from the connection's buffer.
type leanBody struct {
	br   *bufio.Reader
	left int64
}

func (b *leanBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if b.left <= 0 && err == nil {
		err = io.EOF
	}
	if err == io.EOF && b.left > 0 { //nolint:errorlint // bufio returns io.EOF itself
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close is the body's: the connection is dropped or pooled by its owner, which reads the body to
// its end first.
func (b *leanBody) Close() error { return nil }

// maxLeanResponseFields bounds the fields of an answer read here (more go to http.ReadResponse).
const maxLeanResponseFields = 100

// readLean reads a plain response to in from br (see above), or reports false having consumed
// nothing. The response and its body are lr's, valid until the next call.
func (lr *leanResponse) readLean(br *bufio.Reader, in *http.Request) (*http.Response, bool) {
	if in.Method == http.MethodHead {
		return nil, false
	}
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil, false // not all here yet, or longer than the buffer
	}
	text := string(buf[:end+2]) // every line with its CRLF; the header's values are cut from it
	status, rest, _ := strings.Cut(text, "\r\n")
	code, ok := leanStatusLine(status)
	if !ok {
		return nil, false
	}
	lines := strings.Count(rest, "\r\n")
	if lines > maxLeanResponseFields {
		return nil, false
	}
	h := lr.header
	if h == nil {
		h = make(http.Header, lines)
		lr.header = h
	}
	clear(h)
	values := make([]string, 0, lines) // one array for every field's value
	length, lengths, closing := int64(-1), 0, false
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\r\n")
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validFieldName(name) || !leanFieldValue(value) {
			return nil, false // also obs-fold: a line starting with white space has no valid name
		}
		value = textproto.TrimString(value)
		key := textproto.CanonicalMIMEHeaderKey(name)
		switch key {
		case "Content-Length":
			lengths++
			n, ok := parseDigits(value, 18) // at most 18 digits: no overflow
			if !ok || lengths > 1 {
				return nil, false
			}
			length = n
		case "Transfer-Encoding", "Trailer":
			return nil, false
		case "Connection":
			closing = closing || hasToken(value, "close")
		}
		values = append(values, value)
		n := len(values)
		if prev, dup := h[key]; dup {
			h[key] = append(prev[:len(prev):len(prev)], value)
		} else {
			h[key] = values[n-1 : n : n]
		}
	}
	if length < 0 {
		return nil, false
	}
	// As http.ReadResponse: a close leaves the header, and Pragma: no-cache means Cache-Control's.
	if closing {
		delete(h, "Connection")
	}
	if p := h["Pragma"]; len(p) > 0 && p[0] == "no-cache" && h["Cache-Control"] == nil {
		h["Cache-Control"] = []string{"no-cache"}
	}
	_, _ = br.Discard(end + 4)
	lr.body = leanBody{br: br, left: length}
	lr.res = http.Response{
		Status: status[len("HTTP/1.1 "):], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: length, Close: closing, Request: in, Body: http.NoBody,
	}
	if length > 0 {
		lr.res.Body = &lr.body
	}
	return &lr.res, true
}

// leanStatusLine reads "HTTP/1.1 NNN reason" with a status that has a body (200-599 but 204 and
// 304).
func leanStatusLine(line string) (int, bool) {
	const proto = "HTTP/1.1 "
	if len(line) < len(proto)+3 || line[:len(proto)] != proto || len(line) > len(proto)+3 && line[len(proto)+3] != ' ' {
		return 0, false
	}
	code := 0
	for _, c := range []byte(line[len(proto) : len(proto)+3]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified || !leanFieldValue(line) {
		return 0, false
	}
	return code, true
}

// hasToken reports whether the comma-separated list v holds token (any case).
func hasToken(v, token string) bool {
	for part := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(textproto.TrimString(part), token) {
			return true
		}
	}
	return false
}
