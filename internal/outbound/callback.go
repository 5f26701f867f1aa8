package outbound

import (
	"fmt"
	"strings"
	"time"
)

// Limits on a callback: a delayed job's (package queue) and a task's completion callback (package
// relay) follow the same rules, checked here once.
const (
	// MaxCallbackURL bounds the length of a callback URL.
	MaxCallbackURL = 2048
	// MaxCallbackHeaders bounds the number of a callback's headers.
	MaxCallbackHeaders = 32
	// MaxCallbackHeaderValue bounds the length of one header value.
	MaxCallbackHeaderValue = 1024
	// DefaultCallbackTimeout is a callback's timeout when it names none.
	DefaultCallbackTimeout = 30 * time.Second
	// MaxCallbackTimeout bounds a callback's timeout.
	MaxCallbackTimeout = 5 * time.Minute
)

// reservedCallbackHeaders are set by the deliverer (the Standard Webhooks headers) or by net/http,
// never by a callback.
var reservedCallbackHeaders = map[string]bool{
	"webhook-id": true, "webhook-timestamp": true, "webhook-signature": true,
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"te": true, "trailer": true, "upgrade": true, "keep-alive": true, "proxy-connection": true,
}

// CallbackError says which part of a callback is wrong: Part is "url", "headers" or "timeout", the
// name of its field in the callback objects of the HTTP APIs.
type CallbackError struct {
	Part    string
	Message string
}

func (e *CallbackError) Error() string { return "callback." + e.Part + ": " + e.Message }

func callbackErr(part, format string, args ...any) error {
	return &CallbackError{Part: part, Message: fmt.Sprintf(format, args...)}
}

// CheckCallback checks a callback's URL (an absolute http or https URL, as CheckPrefix), headers
// (valid names, none the deliverer sets, short values without line breaks) and timeout (0 means
// DefaultCallbackTimeout, which it returns; otherwise 1ms to MaxCallbackTimeout). A refusal is a
// *CallbackError naming the part.
func CheckCallback(rawURL string, header map[string]string, timeout time.Duration) (time.Duration, error) {
	if rawURL == "" {
		return 0, callbackErr("url", "is required")
	}
	if len(rawURL) > MaxCallbackURL {
		return 0, callbackErr("url", "longer than %d bytes", MaxCallbackURL)
	}
	if err := CheckPrefix(rawURL); err != nil {
		return 0, callbackErr("url", "%s", strings.TrimPrefix(err.Error(), "outbound: "))
	}
	if len(header) > MaxCallbackHeaders {
		return 0, callbackErr("headers", "%d entries is over the limit of %d", len(header), MaxCallbackHeaders)
	}
	for k, v := range header {
		if !ValidToken(k) || len(k) > 128 {
			return 0, callbackErr("headers", "%q is not a header name", k)
		}
		if reservedCallbackHeaders[strings.ToLower(k)] {
			return 0, callbackErr("headers", "%q is set by the deliverer", k)
		}
		if len(v) > MaxCallbackHeaderValue || strings.ContainsAny(v, "\r\n\x00") {
			return 0, callbackErr("headers", "value of %q must be at most %d bytes without line breaks", k, MaxCallbackHeaderValue)
		}
	}
	if timeout < 0 {
		return 0, callbackErr("timeout", "must not be negative")
	}
	if timeout == 0 {
		timeout = DefaultCallbackTimeout
	}
	if timeout < time.Millisecond || timeout > MaxCallbackTimeout {
		return 0, callbackErr("timeout", "must be 1ms..%s", MaxCallbackTimeout)
	}
	return timeout, nil
}
