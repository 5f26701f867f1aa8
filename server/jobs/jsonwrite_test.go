package jobs

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// encodingJSON is what httpapi.WriteJSON, the reflection-based writer, sends for v: the hand-written
// answers must match it byte for byte.
func encodingJSON(t *testing.T, v any) string {
	t.Helper()
	rec := httptest.NewRecorder()
	httpapi.WriteJSON(rec, http.StatusOK, v)
	if rec.Code != http.StatusOK {
		t.Fatalf("WriteJSON(%v): %d %s", v, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func TestWritePublishedMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, res := range []PublishResult{{JobID: "01JAX3", Duplicate: false}, {JobID: "j-1_x", Duplicate: true}} {
		rec := httptest.NewRecorder()
		writePublished(rec, res)
		if rec.Code != http.StatusCreated || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
		if got, want := rec.Body.String(), encodingJSON(t, res); got != want {
			t.Fatalf("got %s want %s", got, want)
		}
	}
}

// TestWriteDeliveriesMatchesEncodingJSON compares the hand-written consume answer with
// encoding/json's on random deliveries: payloads with spaces to compact, base64 payloads,
// attributes needing escapes, non-ASCII, times with and without fractions, optional fields.
func TestWriteDeliveriesMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "a", "queue-1", `quote"d`, `back\slash`, "tab\there", "é ü 日本", "\u2028sep", "<html>&",
		"ctl\x01", "\xffbad utf8"}
	payloads := []string{`1`, `"x"`, `{"a": [1, 2 ,3], "b" : {"c": null}}`, ` [ true , false ] `, `"<b>&amp;"`,
		`{"s":"\u00e9\n"}`, `12.5e3`}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	for range 2000 {
		ds := make([]DeliveryJSON, rng.IntN(4))
		for i := range ds {
			d := DeliveryJSON{
				JobID: pick(texts), Queue: pick(texts), Delivery: rng.IntN(5) + 1, RemainingTries: rng.IntN(5) - 1,
				Priority:    rng.IntN(10),
				Attributes:  map[string]string{},
				PublishedAt: time.Unix(1_790_000_000+rng.Int64N(1e6), rng.Int64N(2)*rng.Int64N(1e9)).UTC(),
				ElapsedMS:   rng.Int64N(1e6),
				LeaseUntil:  time.UnixMilli(1_790_000_000_000 + rng.Int64N(1e9)).UTC(),
			}
			if rng.IntN(2) == 0 {
				d.Payload = json.RawMessage(pick(payloads))
			} else {
				s := strings.Repeat("eA==", rng.IntN(3))
				d.PayloadBase64 = &s
			}
			for range rng.IntN(4) {
				d.Attributes[pick(texts)] = pick(texts)
			}
			if rng.IntN(2) == 0 {
				exp := d.LeaseUntil.Add(time.Hour)
				d.ExpiresAt = &exp
			}
			ds[i] = d
		}
		rec := httptest.NewRecorder()
		writeDeliveries(rec, ds)
		if got, want := rec.Body.String(), encodingJSON(t, map[string]any{"jobs": ds}); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
}

// TestWriteDeliveriesTimeOutsideRFC3339: time.Time's MarshalJSON refuses a year outside
// 0..9999, so httpapi.WriteJSON answers 500 for such a delivery; the hand-written answer must not differ.
func TestWriteDeliveriesTimeOutsideRFC3339(t *testing.T) {
	t.Parallel()
	for _, tm := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.UnixMilli(1<<53 - 1).UTC(), // a Lua-safe integer of milliseconds from Redis: year 287396
	} {
		ds := []DeliveryJSON{{JobID: "j", Queue: "q", Delivery: 1, Attributes: map[string]string{},
			PublishedAt: time.Unix(1_790_000_000, 0).UTC(), LeaseUntil: tm}}
		want := httptest.NewRecorder()
		httpapi.WriteJSON(want, 200, map[string]any{"jobs": ds})
		got := httptest.NewRecorder()
		writeDeliveries(got, ds)
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Errorf("lease_until %v: writeDeliveries %d %q, writeJSON %d %q", tm, got.Code, got.Body, want.Code, want.Body)
		}
	}
}

// TestAppendJSONTimeMatchesMarshalJSON: the digit-by-digit UTC times (and the general path for
// other zones) are what time.Time's MarshalJSON writes, at the edges of years and fractions.
func TestAppendJSONTimeMatchesMarshalJSON(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("east", 5*3600+30*60)
	for _, tm := range []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 2, 3, 4, 5, 6, 1, time.UTC),
		time.Date(999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 11, 28, 3, 4, 5, 100, time.UTC),
		time.Date(2026, 11, 28, 3, 4, 5, 120_000_000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2026, 11, 28, 3, 4, 5, 7_000, east),
		time.UnixMilli(1_790_000_000_123).UTC(),
	} {
		want, err := tm.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONTime(nil, tm); string(got) != string(want) {
			t.Errorf("appendJSONTime(%v) = %s, want %s", tm, got, want)
		}
	}
}
