package outbound

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrInvalidRequest is the error (wrapped) of a Request that cannot be sent as given: a bad method,
// a URL that is not absolute http or https. Like a refused destination it is final.
var ErrInvalidRequest = errors.New("outbound: invalid request")

// Request is one HTTP call to make.
type Request struct {
	// Method is the HTTP method. Default GET.
	Method string
	// URL is the absolute http or https URL to call. Callers check it with UnderPrefix first.
	URL string
	// Header is sent as given (cloned); User-Agent defaults to Config.UserAgent.
	Header http.Header
	// Body is the request body; nil sends none.
	Body []byte
	// Timeout bounds this call instead of Config.Timeout when positive.
	Timeout time.Duration
}

// Response is what a call got back. A 3xx is returned as is: redirects are never followed.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers.
	Header http.Header
	// Body is the response body, at most Config.MaxResponseBytes of it.
	Body []byte
	// Truncated says the body was longer than Config.MaxResponseBytes and was cut.
	Truncated bool
	// Duration is the time from sending the request to the end of reading its body.
	Duration time.Duration
}

// Sender makes HTTP calls under the outbound safety rules. It is safe for concurrent use and keeps
// keep-alive connections to its destinations; Close releases them.
type Sender struct {
	cfg       Config
	client    *http.Client
	transport *http.Transport
}

// New returns a Sender for cfg.
func New(cfg Config) (*Sender, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = dialControl
	}
	tr := &http.Transport{
		// No proxy from the environment: the address check must judge the real destination, and a
		// proxy on loopback would either be refused or, allowed, hide where calls go.
		Proxy:                 nil,
		DialContext:           dialWatched(dialer),
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       cfg.IdleConnTimeout,
		TLSHandshakeTimeout:   cfg.DialTimeout,
		ExpectContinueTimeout: time.Second,
	}
	if cfg.TLSConfig != nil {
		tr.TLSClientConfig = cfg.TLSConfig.Clone()
	}
	client := &http.Client{
		Transport: tr,
		// A redirect would lead the call to a URL nobody checked against the allowed prefixes; the
		// 3xx goes back to the caller instead.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Sender{cfg: cfg, client: client, transport: tr}, nil
}

// Close closes the Sender's idle connections. Calls still in flight finish normally.
func (s *Sender) Close() { s.transport.CloseIdleConnections() }

// Do makes one call. The error is nil whenever a response arrived, whatever its status; otherwise
// it wraps ErrInvalidRequest, ErrDestinationRefused, context.DeadlineExceeded (the call timed out)
// or the network error. Classify turns either into what to do next.
func (s *Sender) Do(ctx context.Context, req Request) (Response, error) {
	httpReq, cancel, err := s.newRequest(ctx, req)
	if err != nil {
		return Response{}, err
	}
	defer cancel()
	start := time.Now()
	resp, err := s.client.Do(httpReq)
	if err != nil {
		// url.Error repeats the whole URL, query included; the message below names it redacted.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		if errors.Is(err, ErrDestinationRefused) {
			s.cfg.Logger.DebugContext(ctx, "outbound: destination refused", "url", redact(httpReq.URL), "error", err)
		}
		return Response{Duration: time.Since(start)}, fmt.Errorf("outbound: %s %s: %w", httpReq.Method, redact(httpReq.URL), err)
	}
	defer resp.Body.Close()
	body, truncated, err := readBounded(resp.Body, s.cfg.MaxResponseBytes)
	out := Response{
		Status:    resp.StatusCode,
		Header:    resp.Header,
		Body:      body,
		Truncated: truncated,
		Duration:  time.Since(start),
	}
	if err != nil {
		return out, fmt.Errorf("outbound: %s %s: read response: %w", httpReq.Method, redact(httpReq.URL), err)
	}
	return out, nil
}

func (s *Sender) newRequest(ctx context.Context, req Request) (*http.Request, context.CancelFunc, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !ValidToken(method) {
		return nil, nil, fmt.Errorf("%w: method %q", ErrInvalidRequest, method)
	}
	if req.Timeout < 0 {
		return nil, nil, fmt.Errorf("%w: timeout must not be negative", ErrInvalidRequest)
	}
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(req.Timeout, s.cfg.Timeout))
	httpReq, err := http.NewRequestWithContext(ctx, method, req.URL, body)
	if err != nil {
		cancel()
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // the url.Error would repeat the URL, query included
		}
		return nil, nil, fmt.Errorf("%w: url: %w", ErrInvalidRequest, err)
	}
	if u := httpReq.URL; (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		cancel()
		return nil, nil, fmt.Errorf("%w: url %q must be absolute http or https", ErrInvalidRequest, redact(u))
	}
	if req.Header != nil {
		httpReq.Header = req.Header.Clone()
	}
	if httpReq.Header.Get("User-Agent") == "" {
		httpReq.Header.Set("User-Agent", s.cfg.UserAgent)
	}
	if host := httpReq.Header.Get("Host"); host != "" {
		// net/http sends Request.Host, not a Host header; honour the caller's choice.
		httpReq.Host = host
		httpReq.Header.Del("Host")
	}
	return httpReq, cancel, nil
}

// readBounded reads at most limit bytes of r and says whether there was more.
func readBounded(r io.Reader, limit int64) ([]byte, bool, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	return body, false, err
}

// ValidToken reports whether s is an HTTP token (RFC 9110): the form net/http accepts for a
// method or a header name.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c > 0x7e || c <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c) {
			return false
		}
	}
	return true
}

// redact drops the userinfo and query of u for logs and errors: either may hold a credential.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		c.RawQuery = "..."
	}
	c.Fragment = ""
	return c.String()
}
