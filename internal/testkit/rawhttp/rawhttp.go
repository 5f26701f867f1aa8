// Package rawhttp sends hand-written HTTP/1.1 byte streams (hostile ones: smuggling attempts,
// malformed framing) to a server and reads back every answer in a form two servers' answers
// compare in, so a test can require that a fast path answers exactly as net/http does.
package rawhttp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// HostileStreams are byte streams that try to smuggle a request past a proxy or confuse its
// parser, by name. Each is written for a waiting room's proxy: PASS stands for an admitted
// visitor's Cookie value (so a fast path would serve it if it took it) and ROOM for the room's
// name; each ends with a request that closes the connection (but "truncated" and the ones the
// server must close itself).
func HostileStreams() map[string]string {
	const end = "GET /end HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nConnection: close\r\n\r\n"
	get := func(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" }
	return map[string]string{
		"plain pipelined":          get("/a") + get("/b?x=1") + end,
		"CL and TE":                "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"TE and CL":                "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nX: " + end,
		"TE chunked":               "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + end,
		"TE chunk extension":       "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=\"1\"\r\nhello\r\n0\r\n\r\n" + end,
		"TE space before colon":    "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + end,
		"TE tab value":             "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding:\tchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + end,
		"TE obs-fold":              "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + end,
		"TE xchunked":              "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + end,
		"TE identity, chunked":     "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n" + end,
		"TE twice":                 "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n" + end,
		"double CL":                "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!" + end,
		"double CL equal":          "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + end,
		"CL list":                  "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 5, 5\r\n\r\nhello" + end,
		"CL plus sign":             "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: +5\r\n\r\nhello" + end,
		"CL negative":              "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: -1\r\n\r\n" + end,
		"CL hex":                   "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 0x5\r\n\r\nhello" + end,
		"CL body":                  "POST /form HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 5\r\n\r\nhello" + get("/after") + end,
		"CL body with request":     "POST /form HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 38\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: shop\r\n\r\n" + end,
		"CL over the lean bound":   "POST /big HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nContent-Length: 70000\r\n\r\n" + strings.Repeat("b", 70000) + end,
		"bare LF in header":        "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-A: 1\nTransfer-Encoding: chunked\r\n\r\n" + end,
		"bare LF line ends":        "GET /a HTTP/1.1\nHost: shop\nCookie: PASS\n\n" + end,
		"bare CR in header":        "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-A: 1\rX-B: 2\r\n\r\n" + end,
		"NUL in value":             "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-A: 1\x002\r\n\r\n" + end,
		"space in name":            "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX A: 1\r\n\r\n" + end,
		"obs-fold":                 "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-A: 1\r\n 2\r\n\r\n" + end,
		"non-ASCII value":          "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-A: caf\xc3\xa9\r\n\r\n" + end,
		"header over lean bound":   "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-Long: " + strings.Repeat("x", 20000) + "\r\n\r\n" + end,
		"header over net/http's":   "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nX-Long: " + strings.Repeat("x", 1100000) + "\r\n\r\n",
		"HTTP/1.0":                 "GET /a HTTP/1.0\r\nHost: shop\r\nCookie: PASS\r\n\r\n",
		"HTTP/1.0 keep-alive":      "GET /a HTTP/1.0\r\nHost: shop\r\nCookie: PASS\r\nConnection: keep-alive\r\n\r\n" + end,
		"absolute form":            "GET http://evil/a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"asterisk":                 "OPTIONS * HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"lowercase method":         "get /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"no Host":                  "GET /a HTTP/1.1\r\nCookie: PASS\r\n\r\n" + end,
		"two Hosts":                "GET /a HTTP/1.1\r\nHost: shop\r\nHost: evil\r\nCookie: PASS\r\n\r\n" + end,
		"bad Host":                 "GET /a HTTP/1.1\r\nHost: sh op/\r\nCookie: PASS\r\n\r\n" + end,
		"Connection close":         "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nConnection: close\r\n\r\n" + get("/never"),
		"Connection keep-alive":    "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nConnection: keep-alive\r\n\r\n" + end,
		"Connection names a field": "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nConnection: X-Secret\r\nX-Secret: 1\r\n\r\n" + end,
		"Upgrade":                  "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n" + end,
		"Expect":                   "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello" + end,
		"control in target":        "GET /a\x01b HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"bad escape in target":     "GET /a%zz?q=%zz;x HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"double slash target":      "GET //evil/a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
		"lean then hand-off":       get("/first") + "POST /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + end,
		"lean then poll":           get("/first") + "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\nSluice-Room-Poll: 1\r\nAccept: application/json\r\n\r\n" + end,
		"no pass":                  "GET /a HTTP/1.1\r\nHost: shop\r\n\r\n" + end,
		"forged pass":              "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: sluice_pass_ROOM=v1.eA.99999999999999.AAAA\r\n\r\n" + end,
		"truncated":                "GET /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n",
		"HEAD":                     "HEAD /a HTTP/1.1\r\nHost: shop\r\nCookie: PASS\r\n\r\n" + end,
	}
}

var isoTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)?`)

// Exchange writes raw on a new connection to addr and returns every response read until the
// server closes the connection (or a generous deadline), each as "status | header | body", the
// Date and X-Request-Id fields left out.
func Exchange(t testing.TB, addr string, raw string) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, _ = io.WriteString(c, raw) // a server may close before it read it all (a header too long)
	if !strings.HasSuffix(raw, "\r\n\r\n") && !strings.HasSuffix(raw, "\n\n") {
		_ = c.(*net.TCPConn).CloseWrite() // a truncated request: the server sees its end
	}
	all, _ := io.ReadAll(c) // until the server closes (every case ends with Connection: close) or the deadline
	br := bufio.NewReader(bytes.NewReader(all))
	var out []string
	for {
		if _, err := br.Peek(1); err != nil {
			return out // every byte read
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return append(out, "unreadable: "+err.Error())
		}
		body, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if err != nil {
			body = append(body, " (broken: "+err.Error()+")"...)
		}
		res.Header.Del("Date")
		res.Header.Del("X-Request-Id")   // random when the request names none
		res.Header.Del("Content-Length") // the body is compared, and its times may differ in length
		keys := make([]string, 0, len(res.Header))
		for k, vv := range res.Header {
			if k == "Set-Cookie" { // random visitor ids and expiry times: the cookies' names only
				for i, v := range vv {
					vv[i], _, _ = strings.Cut(v, "=")
				}
			}
			keys = append(keys, k+"="+strings.Join(vv, ","))
		}
		slices.Sort(keys)
		body = isoTime.ReplaceAll(body, []byte("TIME"))
		out = append(out, fmt.Sprintf("%d | %s | %s | trailer %v", res.StatusCode, strings.Join(keys, " "), body, res.Trailer))
	}
}

// EchoUpstream is an upstream that answers every request with what it read (method, target,
// body) and records it, so a request smuggled past a proxy shows in the answers and in the record.
type EchoUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

// NewEchoUpstream starts an EchoUpstream, closed when t ends.
func NewEchoUpstream(t testing.TB) *EchoUpstream {
	t.Helper()
	u := &EchoUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		line := fmt.Sprintf("%s %s body=%q te=%v cl=%d", r.Method, r.URL.RequestURI(), body, r.TransferEncoding, r.ContentLength)
		u.mu.Lock()
		u.seen = append(u.seen, line)
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, line)
	}))
	t.Cleanup(u.Close)
	return u
}

// Requests returns what the upstream read, one line a request, in order.
func (u *EchoUpstream) Requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}
