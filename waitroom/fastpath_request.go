package waitroom

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// The lean loop's request parser. It reads only the plain requests an admitted visitor's browser
// sends: an HTTP/1.1 request line with an origin-form target, header fields of visible ASCII
// each ending in CRLF, one Host, and a body only when one Content-Length declares it (at most
// leanMaxBody). Anything else (Transfer-Encoding of any kind, a second or odd Content-Length,
// obs-fold, a bare CR or LF, a space before a colon, a control or non-ASCII byte, an upgrade, an
// Expect, HTTP/1.0, a field longer than the lean bounds) it does not try to understand: it
// reports leanHandOff and the connection, with every byte read so far, goes to net/http, which
// reads the same bytes as if the lean loop had never been there. So the lean loop never frames a
// message differently from net/http (no request smuggling between them): it frames only what
// leaves no room for two readings, and forwards only bytes it parsed.

const (
	// maxLeanHeader bounds the request line and header the lean loop reads; a longer one is
	// handed off (net/http applies its own, larger bound).
	maxLeanHeader = 16 << 10
	// maxLeanFields bounds the header fields of a lean request.
	maxLeanFields = 100
)

// leanOutcome is what the parser made of the bytes at the front of a connection.
type leanOutcome int

const (
	leanOK      leanOutcome = iota // a whole request, parsed
	leanMore                       // not a whole request yet: read more
	leanHandOff                    // not a request the lean loop serves: net/http takes it
)

// leanRequest is a parsed request, its strings held by one allocation (text) so that the
// connection's buffer can be reused.
type leanRequest struct {
	method, target, host string
	header               http.Header
	contentLength        int64
	headerLen            int // bytes of request line and header, the blank line included
}

// parseLeanRequest parses the request at the front of b into req (whose header map it clears and
// fills; values share strs's backing array).
func parseLeanRequest(b []byte, req *leanRequest, strs *[]string) leanOutcome {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) >= maxLeanHeader {
			return leanHandOff
		}
		// A bare LF or CR already seen, or a line that is not a request's: no need to wait.
		if !leanPrefixPlausible(b) {
			return leanHandOff
		}
		return leanMore
	}
	if end+4 > maxLeanHeader {
		return leanHandOff
	}
	text := string(b[:end+2]) // every line with its CRLF
	req.headerLen = end + 4
	clear(req.header)
	*strs = (*strs)[:0]
	line, rest, _ := strings.Cut(text, "\r\n")
	if !parseRequestLine(line, req) {
		return leanHandOff
	}
	req.host, req.contentLength = "", 0
	hosts, lengths, fields := 0, 0, 0
	for rest != "" {
		line, rest, _ = strings.Cut(rest, "\r\n")
		fields++
		if fields > maxLeanFields {
			return leanHandOff
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validFieldName(name) || !leanFieldValue(value) {
			return leanHandOff // also obs-fold: a line starting with white space has no valid name
		}
		value = textproto.TrimString(value)
		key := textproto.CanonicalMIMEHeaderKey(name)
		switch key {
		case "Host":
			hosts++
			if !leanHost(value) {
				return leanHandOff
			}
			req.host = value
			continue // net/http takes Host out of the header too
		case "Content-Length":
			lengths++
			n, ok := leanContentLength(value)
			if !ok {
				return leanHandOff
			}
			req.contentLength = n
		case "Transfer-Encoding", "Upgrade", "Expect", "Http2-Settings":
			return leanHandOff
		case "Connection":
			if !strings.EqualFold(value, "keep-alive") {
				return leanHandOff // close, upgrade, or fields named hop-by-hop: net/http's
			}
		}
		if prev, dup := req.header[key]; dup {
			req.header[key] = append(prev, value)
		} else {
			*strs = append(*strs, value)
			n := len(*strs)
			req.header[key] = (*strs)[n-1 : n : n] // shares strs's array: no allocation a field
		}
	}
	if hosts != 1 || lengths > 1 {
		return leanHandOff
	}
	return leanOK
}

// parseRequestLine reads "METHOD /target HTTP/1.1" for the methods the lean loop serves.
func parseRequestLine(line string, req *leanRequest) bool {
	method, rest, ok := strings.Cut(line, " ")
	if !ok {
		return false
	}
	target, proto, ok := strings.Cut(rest, " ")
	if !ok || proto != "HTTP/1.1" || len(target) == 0 || target[0] != '/' || len(target) > 1 && target[1] == '/' {
		return false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		return false // CONNECT, TRACE, lowercase and unknown methods: net/http's
	}
	req.method, req.target = method, target
	return true
}

// leanPrefixPlausible reports whether b, the start of a request not yet whole, may still become
// one the lean loop parses: no bare LF or CR so far.
func leanPrefixPlausible(b []byte) bool {
	for i, c := range b {
		switch c {
		case '\n':
			if i == 0 || b[i-1] != '\r' {
				return false
			}
		case '\r':
			if i+1 < len(b) && b[i+1] != '\n' {
				return false
			}
		}
	}
	return true
}

// leanFieldValue reports whether a field value holds only visible ASCII, spaces and tabs (no
// CR, LF, NUL or other control, no obs-text).
func leanFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c >= 0x7f {
			return false
		}
	}
	return true
}

// leanHost reports whether h is a plain host[:port] (a name, IPv4 or bracketed IPv6 address).
func leanHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if ('a' > c || c > 'z') && ('A' > c || c > 'Z') && ('0' > c || c > '9') && strings.IndexByte(".-:[]", c) < 0 {
			return false
		}
	}
	return true
}

// leanContentLength reads a Content-Length of digits only, at most leanMaxBody.
func leanContentLength(v string) (int64, bool) {
	n, ok := parseDigits(v, 7)
	return n, ok && n <= leanMaxBody
}

// parseDigits reads v, 1 to most ASCII digits and nothing else (no sign, no space), as a number.
func parseDigits(v string, most int) (int64, bool) {
	if v == "" || len(v) > most {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(v[i]-'0')
	}
	return n, true
}

// leanURL parses the request target as net/http's server does.
func leanURL(target string) (*url.URL, bool) {
	u, err := url.ParseRequestURI(target)
	return u, err == nil
}
