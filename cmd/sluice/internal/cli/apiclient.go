package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/version"
)

// apiClient sends JSON requests to a Sluice server's public or admin API.
type apiClient struct {
	api   *serverAPI
	base  string
	token string
	http  *http.Client
}

func newAPIClient(base, token string, timeout time.Duration, api *serverAPI) *apiClient {
	return &apiClient{
		api:   api,
		base:  strings.TrimRight(base, "/"),
		token: token,
		// A command sends a request or two: no connection is worth keeping alive.
		http: &http.Client{Timeout: timeout, Transport: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			DisableKeepAlives: true,
		}},
	}
}

// apiError is an error answer of the server: {"error":{"code","message"}}.
type apiError struct {
	Status  int
	Code    string
	Message string
	Field   string
}

func (e *apiError) Error() string {
	msg := e.Message
	if e.Field != "" && !strings.Contains(msg, e.Field) {
		msg = e.Field + ": " + msg
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, msg, e.Status)
}

// call sends method path with body (JSON-encoded unless nil) and returns the response body of
// a 2xx answer. Other answers become an *apiError; a server that cannot be reached gets an error
// that says where it was looked for and how to start one.
func (c *apiClient) call(ctx context.Context, method, path string, query url.Values, body any) ([]byte, error) {
	if _, err := url.Parse(c.base); err != nil || !strings.HasPrefix(c.base, "http://") && !strings.HasPrefix(c.base, "https://") {
		return nil, usagef("bad server URL %q: want http://host:port", c.base)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sluice-cli/"+version.Get().Version)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return data, nil
	}
	return nil, decodeError(resp.StatusCode, data)
}

// callJSON is call followed by decoding the answer into out (when not nil).
func (c *apiClient) callJSON(ctx context.Context, method, path string, query url.Values, body, out any) ([]byte, error) {
	data, err := c.call(ctx, method, path, query, body)
	if err != nil {
		return nil, err
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("the server's answer to %s %s is not the JSON expected: %w", method, path, err)
		}
	}
	return data, nil
}

func decodeError(status int, data []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
		return &apiError{Status: status, Code: e.Error.Code, Message: e.Error.Message, Field: e.Error.Field}
	}
	text := strings.TrimSpace(string(data))
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return &apiError{Status: status, Code: "http_" + fmt.Sprint(status), Message: text}
}

// transportError explains a request that got no answer.
func (c *apiClient) transportError(err error) error {
	a := c.api
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("the %s is not reachable at %s (connection refused): %s, or point --%s (env %s) at a running one",
			a.name, c.base, a.start, a.urlFlag, a.urlEnv)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("the %s is not reachable at %s (unknown host %s): check --%s (env %s)", a.name, c.base, dnsErr.Name, a.urlFlag, a.urlEnv)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("the %s at %s did not answer in time (--http-timeout): %w", a.name, c.base, err)
	case errors.Is(err, context.Canceled):
		return err
	}
	return fmt.Errorf("the %s is not reachable at %s: %w", a.name, c.base, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// printJSON writes data indented, for --json.
func printJSON(w io.Writer, data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		_, err = w.Write(data)
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printValue writes v as indented JSON, for --json.
func printValue(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return printJSON(w, data)
}

// pathEscape escapes one path segment (a namespace, queue or job id).
func pathEscape(s string) string { return url.PathEscape(s) }
