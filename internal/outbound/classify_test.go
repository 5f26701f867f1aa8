package outbound_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		resp  outbound.Response
		err   error
		want  outbound.Outcome
		after time.Duration
	}{
		{"200", outbound.Response{Status: 200}, nil, outbound.Success, 0},
		{"204", outbound.Response{Status: 204}, nil, outbound.Success, 0},
		{"301 not followed", outbound.Response{Status: 301}, nil, outbound.Final, 0},
		{"400", outbound.Response{Status: 400}, nil, outbound.Final, 0},
		{"404", outbound.Response{Status: 404}, nil, outbound.Final, 0},
		{"409", outbound.Response{Status: 409}, nil, outbound.Final, 0},
		{"429 no header", outbound.Response{Status: 429}, nil, outbound.Retry, 0},
		{"429 seconds", outbound.Response{Status: 429, Header: h("Retry-After", "30")}, nil, outbound.Retry, 30 * time.Second},
		{"503 capped", outbound.Response{Status: 503, Header: h("Retry-After", "99999999")}, nil, outbound.Retry, outbound.MaxRetryAfter},
		{"503 negative", outbound.Response{Status: 503, Header: h("Retry-After", "-5")}, nil, outbound.Retry, 0},
		{"503 garbage", outbound.Response{Status: 503, Header: h("Retry-After", "soon")}, nil, outbound.Retry, 0},
		{"503 past date", outbound.Response{Status: 503, Header: h("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")}, nil, outbound.Retry, 0},
		{"500", outbound.Response{Status: 500}, nil, outbound.Retry, 0},
		{"599", outbound.Response{Status: 599}, nil, outbound.Retry, 0},
		{"refused", outbound.Response{}, fmt.Errorf("dial: %w", outbound.ErrDestinationRefused), outbound.Final, 0},
		{"invalid", outbound.Response{}, fmt.Errorf("x: %w", outbound.ErrInvalidRequest), outbound.Final, 0},
		{"timeout", outbound.Response{}, fmt.Errorf("x: %w", context.DeadlineExceeded), outbound.Retry, 0},
		{"reset", outbound.Response{}, errors.New("connection reset by peer"), outbound.Retry, 0},
		{"2xx body broke off", outbound.Response{Status: 200}, errors.New("unexpected EOF"), outbound.Success, 0},
		{"5xx body broke off", outbound.Response{Status: 502}, errors.New("unexpected EOF"), outbound.Retry, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, after := outbound.Classify(tc.resp, tc.err)
			if o != tc.want || after != tc.after {
				t.Fatalf("Classify = %v, %v; want %v, %v", o, after, tc.want, tc.after)
			}
		})
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Second).Format(http.TimeFormat), 0},
		{now.Add(24 * time.Hour).Format(http.TimeFormat), outbound.MaxRetryAfter},
		{now.Add(90 * time.Second).Format(time.RFC850), 90 * time.Second}, // obsolete form still parsed
		{"120", 2 * time.Minute},
		{"", 0},
	} {
		if got := outbound.RetryAfter(http.Header{"Retry-After": {tc.value}}, now); got != tc.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, want := range map[outbound.Outcome]string{outbound.Success: "success", outbound.Retry: "retry", outbound.Final: "final", 0: "Outcome(0)"} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q, want %q", int(o), got, want)
		}
	}
}
