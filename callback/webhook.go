package callback

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com) every callback carries.
const (
	// HeaderWebhookID is the job id: the same on every try of a job, so a receiver can drop
	// repeats (deliveries are at least once).
	HeaderWebhookID = "webhook-id"
	// HeaderWebhookTimestamp is when the try was sent, in Unix seconds.
	HeaderWebhookTimestamp = "webhook-timestamp"
	// HeaderWebhookSignature is one "v1,<base64 HMAC-SHA256>" per live secret, space-separated.
	HeaderWebhookSignature = "webhook-signature"
)

// SecretPrefix starts every callback secret: "whsec_" then the base64 of the key bytes.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far the timestamp of a callback may be from the receiver's clock for
// Verify to accept it: old enough to absorb clock skew and slow networks, short enough that a
// captured delivery cannot be replayed much later.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify. Each is wrapped with detail; receivers answer all of them with a 4xx (which
// the deliverer takes as final) or a 401.
var (
	// ErrMissingHeaders: one of the three webhook headers is absent or malformed.
	ErrMissingHeaders = errors.New("callback: webhook headers missing or malformed")
	// ErrTimestampOutOfRange: the timestamp is older (or further ahead) than the tolerance.
	ErrTimestampOutOfRange = errors.New("callback: webhook timestamp out of tolerance")
	// ErrSignatureMismatch: no signature matches the secret.
	ErrSignatureMismatch = errors.New("callback: webhook signature does not match")
	// ErrInvalidSecret: the secret is not "whsec_" followed by base64.
	ErrInvalidSecret = errors.New("callback: invalid webhook secret")
)

// NewSecret returns a fresh callback secret: "whsec_" and the base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey decodes a "whsec_..." secret into its HMAC key. The prefix is optional, as the
// Standard Webhooks libraries accept both forms.
func secretKey(secret string) ([]byte, error) {
	raw := strings.TrimPrefix(secret, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 16 || len(key) > 64 {
		return nil, fmt.Errorf("%w: want %s followed by the base64 of 16..64 bytes", ErrInvalidSecret, SecretPrefix)
	}
	return key, nil
}

// CheckSecret returns an error when secret cannot sign (for configuration input).
func CheckSecret(secret string) error {
	_, err := secretKey(secret)
	return err
}

// signature is "v1," and the base64 HMAC-SHA256 of "id.timestamp.body" under key.
func signature(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign sets the three Standard Webhooks headers on h for a delivery of body with id at ts,
// signed with every secret given (two during a rotation, so receivers holding either verify).
// Secrets that do not decode are skipped; with none left, no signature header is set.
func Sign(h http.Header, secrets []string, id string, ts time.Time, body []byte) {
	unix := ts.Unix()
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(unix, 10))
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		if key, err := secretKey(s); err == nil {
			sigs = append(sigs, signature(key, id, unix, body))
		}
	}
	if len(sigs) > 0 {
		h.Set(HeaderWebhookSignature, strings.Join(sigs, " "))
	}
}

// Verify checks a callback Sluice delivered: the webhook headers are present, the timestamp is
// within DefaultTolerance of now, and one of the signatures is the HMAC of the body under secret.
// Call it on the raw body, before any JSON decoding. During a rotation check the new secret,
// then the old one (or keep either: Sluice signs with both).
func Verify(secret string, header http.Header, body []byte) error {
	return VerifyAt(secret, header, body, time.Now(), DefaultTolerance)
}

// VerifyAt is Verify with the receiver's clock and the tolerance given.
func VerifyAt(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	id := header.Get(HeaderWebhookID)
	tsText := header.Get(HeaderWebhookTimestamp)
	sigs := header.Get(HeaderWebhookSignature)
	if id == "" || tsText == "" || sigs == "" {
		return fmt.Errorf("%w: need %s, %s and %s", ErrMissingHeaders, HeaderWebhookID, HeaderWebhookTimestamp, HeaderWebhookSignature)
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s %q is not Unix seconds", ErrMissingHeaders, HeaderWebhookTimestamp, tsText)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: %s off by %s (tolerance %s)", ErrTimestampOutOfRange, HeaderWebhookTimestamp, d.Round(time.Second), tolerance)
	}
	want := signature(key, id, ts, body)
	for _, got := range strings.Fields(sigs) {
		if hmac.Equal([]byte(got), []byte(want)) {
			return nil
		}
	}
	return ErrSignatureMismatch
}
