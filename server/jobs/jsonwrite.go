package jobs

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// The answers of the hot job requests (publish, consume) are written here without reflection,
// byte for byte as httpapi.WriteJSON would write them; jsonwrite_test.go compares the two.

// writePublished answers a single publish: 201 {"job_id","duplicate"}.
func writePublished(w http.ResponseWriter, res PublishResult) {
	buf := httpapi.GetBuffer()
	defer httpapi.PutBuffer(buf)
	b := append(httpapi.FreeSpace(buf, 128), `{"job_id":`...)
	b = httpapi.AppendJSONString(b, res.JobID)
	b = append(b, `,"duplicate":`...)
	b = strconv.AppendBool(b, res.Duplicate)
	b = append(b, "}\n"...)
	httpapi.WriteBody(w, http.StatusCreated, "application/json", b)
}

// writeDeliveries answers a consume: 200 {"jobs": [...]}.
func writeDeliveries(w http.ResponseWriter, ds []DeliveryJSON) {
	buf := httpapi.GetBuffer()
	defer httpapi.PutBuffer(buf)
	b := append(httpapi.FreeSpace(buf, 1024), `{"jobs":[`...)
	for i := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendDelivery(b, &ds[i]); !ok {
			httpapi.WriteJSON(w, http.StatusOK, map[string]any{"jobs": ds}) // not expected: let encoding/json decide
			return
		}
	}
	b = append(b, "]}\n"...)
	httpapi.WriteBody(w, http.StatusOK, "application/json", b)
}

// appendDelivery appends d as encoding/json encodes DeliveryJSON; false when encoding/json would
// refuse it (a payload that is not valid JSON, a time outside the years 0..9999).
func appendDelivery(b []byte, d *DeliveryJSON) ([]byte, bool) {
	if !jsonTime(d.PublishedAt) || !jsonTime(d.LeaseUntil) || d.ExpiresAt != nil && !jsonTime(*d.ExpiresAt) {
		return b, false
	}
	b = append(b, `{"job_id":`...)
	b = httpapi.AppendJSONString(b, d.JobID)
	b = append(b, `,"queue":`...)
	b = httpapi.AppendJSONString(b, d.Queue)
	if len(d.Payload) > 0 {
		b = append(b, `,"payload":`...)
		// encoding/json compacts a RawMessage (HTML escaping is off in httpapi.WriteJSON).
		out := bytes.NewBuffer(b)
		if err := json.Compact(out, d.Payload); err != nil {
			return b, false
		}
		b = out.Bytes()
	}
	if d.PayloadBase64 != nil {
		b = append(b, `,"payload_base64":`...)
		b = httpapi.AppendJSONString(b, *d.PayloadBase64)
	}
	b = append(b, `,"delivery":`...)
	b = strconv.AppendInt(b, int64(d.Delivery), 10)
	b = append(b, `,"remaining_tries":`...)
	b = strconv.AppendInt(b, int64(d.RemainingTries), 10)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(d.Priority), 10)
	b = append(b, `,"attributes":`...)
	b = httpapi.AppendJSONStringMap(b, d.Attributes)
	b = append(b, `,"published_at":`...)
	b = appendJSONTime(b, d.PublishedAt)
	b = append(b, `,"elapsed_ms":`...)
	b = strconv.AppendInt(b, d.ElapsedMS, 10)
	b = append(b, `,"lease_until":`...)
	b = appendJSONTime(b, d.LeaseUntil)
	if d.ExpiresAt != nil {
		b = append(b, `,"expires_at":`...)
		b = appendJSONTime(b, *d.ExpiresAt)
	}
	return append(b, '}'), true
}

// jsonTime reports whether time.Time's MarshalJSON can encode t (RFC 3339 has four-digit years).
func jsonTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// appendJSONTime appends t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds); the caller
// checks jsonTime first. The answers' times are UTC: those are written digit by digit, which costs
// a fraction of what AppendFormat's general layout interpreter does (three times per delivery).
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	if t.Location() != time.UTC {
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	if ns := t.Nanosecond(); ns != 0 {
		// RFC3339Nano's ".999999999": the fraction without its trailing zeros.
		digits := 9
		for ns%10 == 0 {
			ns /= 10
			digits--
		}
		b = append(b, '.')
		b = appendDigits(b, ns, digits)
	}
	return append(b, 'Z', '"')
}

// appendDigits appends n (0 <= n < 10^width) in exactly width decimal digits.
func appendDigits(b []byte, n, width int) []byte {
	start := len(b)
	for range width {
		b = append(b, '0')
	}
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return b
}
