package callback_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/callback"
)

func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	oldSecret, newSecret := callback.NewSecret(), callback.NewSecret()
	body := []byte(`{"order":42}`)
	sent := time.Now()
	signed := func(secrets ...string) http.Header {
		h := http.Header{}
		callback.Sign(h, secrets, "job-1", sent, body)
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
		{"tampered body", newSecret, signed(newSecret), []byte(`{"order":43}`), sent, callback.ErrSignatureMismatch},
		{"wrong secret", oldSecret, signed(newSecret), body, sent, callback.ErrSignatureMismatch},
		{"old timestamp", newSecret, signed(newSecret), body, sent.Add(callback.DefaultTolerance + time.Minute), callback.ErrTimestampOutOfRange},
		{"future timestamp", newSecret, signed(newSecret), body, sent.Add(-callback.DefaultTolerance - time.Minute), callback.ErrTimestampOutOfRange},
		{"rotation: new secret", newSecret, signed(newSecret, oldSecret), body, sent, nil},
		{"rotation: old secret", oldSecret, signed(newSecret, oldSecret), body, sent, nil},
		{"unsigned", newSecret, signed(), body, sent, callback.ErrMissingHeaders},
		{"bad secret", "whsec_%%%", signed(newSecret), body, sent, callback.ErrInvalidSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := callback.VerifyAt(tc.secret, tc.header, tc.body, tc.now, callback.DefaultTolerance)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("VerifyAt = %v, want %v", err, tc.want)
			}
		})
	}

	t.Run("tampered id", func(t *testing.T) {
		t.Parallel()
		h := signed(newSecret)
		h.Set(callback.HeaderWebhookID, "job-2")
		if err := callback.Verify(newSecret, h, body); !errors.Is(err, callback.ErrSignatureMismatch) {
			t.Fatalf("Verify = %v", err)
		}
	})
	t.Run("tampered timestamp", func(t *testing.T) {
		t.Parallel()
		h := signed(newSecret)
		h.Set(callback.HeaderWebhookTimestamp, "1")
		if err := callback.VerifyAt(newSecret, h, body, time.Unix(1, 0), time.Minute); !errors.Is(err, callback.ErrSignatureMismatch) {
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
	callback.Sign(h, []string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), body)
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got := h.Get(callback.HeaderWebhookSignature); got != want {
		t.Fatalf("signature = %s, want %s", got, want)
	}
	if err := callback.VerifyAt(secret, h, body, time.Unix(1614265330, 0), time.Minute); err != nil {
		t.Fatalf("VerifyAt = %v", err)
	}
	if !strings.HasPrefix(callback.NewSecret(), callback.SecretPrefix) || callback.CheckSecret(callback.NewSecret()) != nil {
		t.Fatal("NewSecret makes a secret CheckSecret refuses")
	}
}
