package waitroom

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// upstreamRequest writes the request the lean path sends upstream straight from the client's
// request: the bytes net/http's Request.Write would write for the request that
// httputil.ReverseProxy with Rewrite{SetURL; SetXForwarded} builds, without building it. The
// proxy's hot path paid for a copy of the header map, a URL, a sort through a pooled sorter and
// fmt for every request; here nothing is allocated unless the upstream has a path or query of its
// own (or the request's path or query needs escaping).
type upstreamRequest struct {
	target *url.URL
	// hostLine is "Host: <upstream host>\r\n", as Request.Write cleans the host (punycode, zone
	// removed), computed once.
	hostLine string
}

func newUpstreamRequest(target *url.URL) upstreamRequest {
	return upstreamRequest{target: target, hostLine: hostLine(target)}
}

// hostLine is the Host line Request.Write sends for a request to target.
func hostLine(target *url.URL) string {
	var b strings.Builder
	req := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: target.Host, Path: "/"},
		Header: http.Header{"User-Agent": {""}}}
	if err := req.Write(&b); err != nil {
		return "Host: \r\n"
	}
	_, rest, _ := strings.Cut(b.String(), "\r\n")
	line, _, _ := strings.Cut(rest, "\r\n")
	return line + "\r\n"
}

// bodyLength is how many body bytes the lean path sends for in (it takes no request of unknown
// length).
func bodyLength(in *http.Request) int64 {
	if in.Body == nil {
		return 0
	}
	return in.ContentLength
}

// requestHeaderSkipped are the client's header fields the proxy never passes on as they are: the
// hop-by-hop ones, those it rewrites (X-Forwarded-*, Forwarded) and those Request.Write writes
// itself (Host, User-Agent, Content-Length, Transfer-Encoding, Trailer).
var requestHeaderSkipped = func() map[string]bool {
	m := map[string]bool{
		"Forwarded": true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
		"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true,
	}
	for _, k := range hopHeaders {
		m[k] = true
	}
	return m
}()

// maxSortedHeaderKeys bounds the keys sorted on the stack; a request with more sorts a slice.
const maxSortedHeaderKeys = 32

var errBadRequestTarget = errors.New("net/http: can't write control character in Request.URL")

// write writes in's request line and header as sent upstream, then its body. A failed write
// stays in bw (bufio keeps its first error): the caller's Flush reports it.
func (u upstreamRequest) write(bw *bufio.Writer, in *http.Request) error {
	path, query, hasQuery := u.requestTarget(in)
	if strings.IndexFunc(path, isCTL) >= 0 || strings.IndexFunc(query, isCTL) >= 0 {
		return errBadRequestTarget
	}
	if in.Method == "" || strings.IndexFunc(in.Method, func(r rune) bool { return r <= ' ' || r >= 0x7f }) >= 0 {
		return fmt.Errorf("net/http: invalid method %q", in.Method)
	}
	_, _ = bw.WriteString(in.Method)
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(path)
	if hasQuery {
		_ = bw.WriteByte('?')
		_, _ = bw.WriteString(query)
	}
	_, _ = bw.WriteString(" HTTP/1.1\r\n")
	_, _ = bw.WriteString(u.hostLine)
	if ua := in.Header["User-Agent"]; len(ua) > 0 && ua[0] != "" {
		writeHeaderLine(bw, "User-Agent", ua[0])
	}
	n := bodyLength(in)
	if n > 0 || n == 0 && (in.Method == http.MethodPost || in.Method == http.MethodPut || in.Method == http.MethodPatch) {
		_, _ = bw.WriteString("Content-Length: ")
		_, _ = bw.Write(strconv.AppendInt(bw.AvailableBuffer(), n, 10))
		_, _ = bw.WriteString("\r\n")
	}

	// The client's fields less the skipped ones and those its Connection header names, and the
	// proxy's own, sorted by name as Request.Write sorts them.
	var stack [maxSortedHeaderKeys]string
	keys := stack[:0]
	connection := in.Header["Connection"]
	for k := range in.Header {
		if requestHeaderSkipped[k] || len(connection) > 0 && headerHasToken(connection, k) {
			continue
		}
		keys = append(keys, k)
	}
	trailers := headerHasToken(in.Header["Te"], "trailers")
	if trailers {
		keys = append(keys, "Te")
	}
	clientIP, _, ipErr := net.SplitHostPort(in.RemoteAddr)
	if ipErr == nil {
		keys = append(keys, "X-Forwarded-For")
	}
	keys = append(keys, "X-Forwarded-Host", "X-Forwarded-Proto")
	sortStrings(keys)
	for _, k := range keys {
		switch {
		case k == "Te" && trailers:
			_, _ = bw.WriteString("Te: trailers\r\n")
		case k == "X-Forwarded-For" && ipErr == nil:
			writeHeaderLine(bw, k, clientIP)
		case k == "X-Forwarded-Host":
			writeHeaderLine(bw, k, in.Host)
		case k == "X-Forwarded-Proto" && in.TLS == nil:
			_, _ = bw.WriteString("X-Forwarded-Proto: http\r\n")
		case k == "X-Forwarded-Proto":
			_, _ = bw.WriteString("X-Forwarded-Proto: https\r\n")
		case validFieldName(k): // an invalid name is dropped, as by Request.Write
			for _, v := range in.Header[k] {
				writeHeaderLine(bw, k, v)
			}
		}
	}
	_, _ = bw.WriteString("\r\n")
	if n <= 0 {
		return nil
	}
	copied, err := io.Copy(bw, io.LimitReader(in.Body, n))
	if err == nil && copied != n {
		err = fmt.Errorf("http: ContentLength=%d with Body length %d", n, copied)
	}
	return err
}

// requestTarget is the request target sent upstream, as httputil.ReverseProxy's SetURL makes it:
// the upstream's path joined with the request's, and the upstream's query before the request's
// (re-encoded when net/url would read it differently). hasQuery: a "?" goes between path and
// query (even before an empty one, when the request had it).
func (u upstreamRequest) requestTarget(in *http.Request) (path, query string, hasQuery bool) {
	t := u.target
	if t.Path == "" && t.RawPath == "" && strings.HasPrefix(in.URL.Path, "/") {
		// The common case, without building a URL: joined with an empty upstream path, the
		// request's path stays as it is.
		path = in.URL.EscapedPath()
	} else {
		out := url.URL{Scheme: t.Scheme, Host: t.Host}
		out.Path, out.RawPath = joinURLPath(t, in.URL)
		path = cmp.Or(out.EscapedPath(), "/")
	}
	query = cleanQueryParams(in.URL.RawQuery)
	if t.RawQuery != "" {
		if query == "" {
			query = t.RawQuery
		} else {
			query = t.RawQuery + "&" + query
		}
	}
	return path, query, in.URL.ForceQuery || query != ""
}

// writeHeaderLine writes "key: value\r\n" with the value cleaned as Request.Write cleans it
// (line breaks made spaces, surrounding white space trimmed).
func writeHeaderLine(bw *bufio.Writer, key, value string) {
	if strings.ContainsAny(value, "\r\n") {
		value = strings.NewReplacer("\r", " ", "\n", " ").Replace(value)
	}
	_, _ = bw.WriteString(key)
	_, _ = bw.WriteString(": ")
	_, _ = bw.WriteString(textproto.TrimString(value))
	_, _ = bw.WriteString("\r\n")
}

// validFieldName reports whether k is an RFC 9110 token, as a header field name must be.
func validFieldName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !tokenBytes[k[i]] {
			return false
		}
	}
	return true
}

// tokenBytes are the bytes of an RFC 9110 token: every visible ASCII character but the
// delimiters (a table: each header field's name is checked, on every request and answer).
var tokenBytes = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

func isCTL(r rune) bool { return r < ' ' || r == 0x7f }

// sortStrings sorts a few strings in place (insertion sort: no allocation, fast for the ten or
// so fields of a request).
func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
