package relay_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/relay"
)

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := relay.NewSecret(), relay.NewSecret()
	body := []byte(`{"order":42}`)
	sent := time.Now()
	signed := func(secrets ...string) http.Header {
		h := http.Header{}
		relay.SignWebhook(h, secrets, "job-1", sent, body)
		return h
	}
	for _, tc := range []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", newSecret, signed(newSecret), body, sent, nil},
		{"tampered body", newSecret, signed(newSecret), []byte(`{"order":43}`), sent, relay.ErrSignatureMismatch},
		{"wrong secret", oldSecret, signed(newSecret), body, sent, relay.ErrSignatureMismatch},
		{"old timestamp", newSecret, signed(newSecret), body, sent.Add(relay.DefaultTolerance + time.Minute), relay.ErrTimestampOutOfRange},
		{"future timestamp", newSecret, signed(newSecret), body, sent.Add(-relay.DefaultTolerance - time.Minute), relay.ErrTimestampOutOfRange},
		{"rotation: new secret", newSecret, signed(newSecret, oldSecret), body, sent, nil},
		{"rotation: old secret", oldSecret, signed(newSecret, oldSecret), body, sent, nil},
		{"unsigned", newSecret, signed(), body, sent, relay.ErrMissingHeaders},
		{"bad secret", "whsec_%%%", signed(newSecret), body, sent, relay.ErrInvalidSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := relay.VerifyAt(tc.secret, tc.header, tc.body, tc.now, relay.DefaultTolerance)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("VerifyAt = %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("tampered id", func(t *testing.T) {
		t.Parallel()
		h := signed(newSecret)
		h.Set(relay.HeaderWebhookID, "job-2")
		if err := relay.Verify(newSecret, h, body); !errors.Is(err, relay.ErrSignatureMismatch) {
			t.Fatalf("Verify = %v", err)
		}
	})
	t.Run("tampered timestamp", func(t *testing.T) {
		t.Parallel()
		h := signed(newSecret)
		h.Set(relay.HeaderWebhookTimestamp, "1")
		if err := relay.VerifyAt(newSecret, h, body, time.Unix(1, 0), time.Minute); !errors.Is(err, relay.ErrSignatureMismatch) {
			t.Fatalf("Verify = %v", err)
		}
	})
}

// TestSignatureMatchesTheStandardWebhooksVector checks the signing scheme against the example of
// the Standard Webhooks specification, so receivers using its libraries verify Sluice's calls.
func TestSignatureMatchesTheStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	h := http.Header{}
	body := []byte(`{"test": 2432232314}`)
	relay.SignWebhook(h, []string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), body)
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got := h.Get(relay.HeaderWebhookSignature); got != want {
		t.Fatalf("signature = %s, want %s", got, want)
	}
	if err := relay.VerifyAt(secret, h, body, time.Unix(1614265330, 0), time.Minute); err != nil {
		t.Fatalf("VerifyAt = %v", err)
	}
	if !strings.HasPrefix(relay.NewSecret(), relay.SecretPrefix) || relay.CheckSecret(relay.NewSecret()) != nil {
		t.Fatal("NewSecret makes a secret CheckSecret refuses")
	}
}
