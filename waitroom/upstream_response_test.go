package waitroom

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// readLean reads every response it takes exactly as http.ReadResponse does (status, header,
// length, close, body, and where the next response starts), and takes nothing from a response it
// leaves to http.ReadResponse.
func TestReadLeanAnswersAsReadResponse(t *testing.T) {
	t.Parallel()
	const next = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"
	plain := "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok"
	cases := []struct {
		name, raw, method string
		lean              bool // readLean must take it
	}{
		{"nginx", plain, http.MethodGet, true},
		{"empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", http.MethodGet, true},
		{"close", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", http.MethodGet, true},
		{"close in a list", "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\nconnection: Keep-Alive, CLOSE\r\n\r\nno", http.MethodPost, true},
		{"fields twice", "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, true},
		{"odd case names", "HTTP/1.1 200 OK\r\ncontent-TYPE: text/html\r\nx-a_b: 1\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, true},
		{"tab and spaces", "HTTP/1.1 200 OK\r\nX-A: \t a b \t\r\nContent-Length:2\r\n\r\nok", http.MethodGet, true},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, true},
		{"pragma", "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, true},
		{"5xx", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nRetry-After: 5\r\n\r\nbusy", http.MethodGet, true},
		{"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n", http.MethodHead, false},
		{"204", "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", http.MethodGet, false},
		{"304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 20\r\n\r\n", http.MethodGet, false},
		{"100 then 200", "HTTP/1.1 100 Continue\r\n\r\n" + plain, http.MethodPost, false},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", http.MethodGet, false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"no length", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", http.MethodGet, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", http.MethodGet, false},
		{"chunked and length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", http.MethodGet, false},
		{"trailer", "HTTP/1.1 200 OK\r\nTrailer: X-T\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"length twice", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"lengths differ", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", http.MethodGet, false},
		{"length sign", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", http.MethodGet, false},
		{"length huge", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nok", http.MethodGet, false},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", http.MethodGet, false},
		{"bare LF in a field", "HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 9\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"NUL", "HTTP/1.1 200 OK\r\nX-A: 1\x002\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"non-ASCII", "HTTP/1.1 200 OK\r\nX-A: caf\xc3\xa9\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"space in name", "HTTP/1.1 200 OK\r\nX A: 1\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"space before colon", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", http.MethodGet, false},
		{"no colon", "HTTP/1.1 200 OK\r\nX-A\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"empty name", "HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"status 4 digits", "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"status glued", "HTTP/1.1 200OK\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"status 600", "HTTP/1.1 600 X\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"lowercase proto", "http/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
		{"header not all here", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", http.MethodGet, false},
		{"body cut short", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", http.MethodGet, true},
		{"header over the buffer", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("x", 5000) + "\r\nContent-Length: 2\r\n\r\nok", http.MethodGet, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := tc.raw
			if !strings.HasSuffix(tc.name, "short") && !strings.HasPrefix(tc.name, "header not") && !strings.HasPrefix(tc.name, "no length") {
				raw += next
			}
			in := &http.Request{Method: tc.method}
			br := bufio.NewReader(strings.NewReader(raw))
			_, _ = br.Peek(1)
			var lr leanResponse
			got, ok := lr.readLean(br, in)
			if ok != tc.lean {
				t.Fatalf("readLean took it: %v, want %v", ok, tc.lean)
			}
			if !ok {
				if rest, _ := io.ReadAll(br); string(rest) != raw {
					t.Fatalf("readLean left it but consumed %d bytes", len(raw)-len(rest))
				}
				return
			}
			defer got.Body.Close()
			wbr := bufio.NewReader(strings.NewReader(raw))
			want, err := http.ReadResponse(wbr, in)
			if err != nil {
				t.Fatalf("http.ReadResponse refused what readLean took: %v", err)
			}
			defer want.Body.Close()
			if got.StatusCode != want.StatusCode || got.Status != want.Status || got.ContentLength != want.ContentLength ||
				got.Close != want.Close || !reflect.DeepEqual(got.Header, want.Header) {
				t.Fatalf("readLean: %d %q len %d close %v %v\nReadResponse: %d %q len %d close %v %v", got.StatusCode, got.Status,
					got.ContentLength, got.Close, got.Header, want.StatusCode, want.Status, want.ContentLength, want.Close, want.Header)
			}
			gotBody, gotErr := io.ReadAll(got.Body)
			wantBody, wantErr := io.ReadAll(want.Body)
			if string(gotBody) != string(wantBody) || !errors.Is(gotErr, io.ErrUnexpectedEOF) != !errors.Is(wantErr, io.ErrUnexpectedEOF) {
				t.Fatalf("body: %q %v, want %q %v", gotBody, gotErr, wantBody, wantErr)
			}
			gotRest, _ := io.ReadAll(br)
			wantRest, _ := io.ReadAll(wbr)
			if string(gotRest) != string(wantRest) {
				t.Fatalf("after the body: %q, want %q", gotRest, wantRest)
			}
		})
	}
}

// validFieldName takes exactly RFC 9110's tokens: tchar = "!" / "#" / "$" / "%" / "&" / "'" /
// "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
func TestValidFieldNameTakesTokens(t *testing.T) {
	t.Parallel()
	for c := range 256 {
		name := "X-" + string([]byte{byte(c)}) + "a"
		want := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
		if got := validFieldName(name); got != want {
			t.Errorf("byte %#x: validFieldName %v, want %v", c, got, want)
		}
	}
	if validFieldName("") {
		t.Error("the empty name is valid")
	}
}
