package relay

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// An online task's permit says "task T of endpoint E may make one call until X". It is signed
// (HMAC-SHA256 with Config.PermitKeys[0]; every key verifies, for rotation) so any process that
// shares the keys can check it without a lookup, and it is single-use: the first check marks the
// task's permit used in Redis, atomically, and a second one is refused. The concurrency slot the
// permit holds is freed by Done, by Cancel or when the permit expires.
//
// Format: "p1.<task id>.<expiry unix ms>.<base64url MAC of "p1\n<task id>\n<expiry>">". A permit
// of an earlier attempt of the same task names another expiry and is refused.

// PermitHeader is the request header RequirePermit reads the permit from.
const PermitHeader = "Sluice-Permit"

func (c *Client) signPermit(id string, expiry int64) string {
	e := strconv.FormatInt(expiry, 10)
	return "p1." + id + "." + e + "." + base64.RawURLEncoding.EncodeToString(permitMAC(c.cfg.PermitKeys[0], id, e))
}

func permitMAC(key []byte, id, expiry string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("p1\n" + id + "\n" + expiry))
	return m.Sum(nil)
}

// PermitInfo is what a valid permit says.
type PermitInfo struct {
	TaskID   string
	Endpoint string
	Expires  time.Time
}

// parsePermit checks a permit's form and signature (not its use or expiry).
func (c *Client) parsePermit(token string) (PermitInfo, string, error) {
	if len(c.cfg.PermitKeys) == 0 || !strings.HasPrefix(token, "p1.") {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	rest := token[len("p1."):]
	j := strings.LastIndexByte(rest, '.')
	if j < 0 {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	mac, err := base64.RawURLEncoding.DecodeString(rest[j+1:])
	if err != nil {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	rest = rest[:j]
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	id, exp := rest[:i], rest[i+1:]
	expMs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	endpoint, ok := splitID(id)
	if !ok {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	valid := false
	for _, k := range c.cfg.PermitKeys {
		if hmac.Equal(mac, permitMAC(k, id, exp)) {
			valid = true
		}
	}
	if !valid {
		return PermitInfo{}, "", ErrPermitInvalid
	}
	return PermitInfo{TaskID: id, Endpoint: endpoint, Expires: time.UnixMilli(expMs).UTC()}, exp, nil
}

// CheckPermit admits one call: it verifies the permit's signature, then marks it used in Redis
// in one script, so of two checks of one permit only the first succeeds. Errors:
// ErrPermitInvalid (malformed, forged, of an earlier turn), ErrPermitExpired, ErrPermitUsed,
// ErrNotPermitted (the task was cancelled or has ended). This is what an nginx auth_request
// handler calls.
func (c *Client) CheckPermit(ctx context.Context, token string) (PermitInfo, error) {
	info, exp, err := c.parsePermit(token)
	if err != nil {
		return PermitInfo{}, err
	}
	if !time.Now().Before(info.Expires) {
		return PermitInfo{}, ErrPermitExpired
	}
	res, err := c.run(ctx, scriptPermit, info.Endpoint, info.TaskID, exp, "use", 0).Text()
	if err != nil {
		return PermitInfo{}, fmt.Errorf("relay: check permit: %w", err)
	}
	if err := permitErr(res); err != nil {
		return PermitInfo{}, err
	}
	return info, nil
}

func permitErr(res string) error {
	switch res {
	case "ok":
		return nil
	case "used":
		return ErrPermitUsed
	case "expired":
		return ErrPermitExpired
	case "stale":
		return ErrPermitInvalid
	case "gone":
		return ErrNotFound
	default:
		return fmt.Errorf("%w: task is %s", ErrNotPermitted, res)
	}
}

// DoneParams report the end of an online task's call.
type DoneParams struct {
	// HTTPStatus is the status the endpoint answered, kept with the task. Optional.
	HTTPStatus int
}

// Done ends a permitted online task as completed and frees its concurrency slot, so the next
// task can go. The permit proves the caller holds the task (used or not). Errors as CheckPermit
// (but a used permit is fine).
func (c *Client) Done(ctx context.Context, id, permit string, p DoneParams) error {
	info, exp, err := c.parsePermit(permit)
	if err != nil {
		return err
	}
	if info.TaskID != id {
		return ErrPermitInvalid
	}
	res, err := c.run(ctx, scriptPermit, info.Endpoint, id, exp, "done", p.HTTPStatus).Text()
	if err != nil {
		return fmt.Errorf("relay: done %s: %w", id, err)
	}
	return permitErr(res)
}

// PermitChecker checks permits; *Client is one.
type PermitChecker interface {
	CheckPermit(ctx context.Context, token string) (PermitInfo, error)
}

var _ PermitChecker = (*Client)(nil)

type permitKey struct{}

// PermitFrom returns the permit RequirePermit admitted the request with.
func PermitFrom(ctx context.Context) (PermitInfo, bool) {
	p, ok := ctx.Value(permitKey{}).(PermitInfo)
	return p, ok
}

// RequirePermit is net/http middleware for an endpoint (or its gateway): a request passes only
// with a valid, unused permit in the Sluice-Permit header (or "Authorization: Permit <token>"),
// which it uses up. Missing, forged, reused or expired permits get 403 (401 when missing); a
// Redis failure gets 503. The handler finds the permit with PermitFrom.
func RequirePermit(checker PermitChecker, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get(PermitHeader)
		if token == "" {
			if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Permit "); ok {
				token = strings.TrimSpace(a)
			}
		}
		if token == "" {
			http.Error(w, "permit required", http.StatusUnauthorized)
			return
		}
		info, err := checker.CheckPermit(r.Context(), token)
		switch {
		case err == nil:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), permitKey{}, info)))
		case errors.Is(err, ErrPermitInvalid), errors.Is(err, ErrPermitExpired), errors.Is(err, ErrPermitUsed),
			errors.Is(err, ErrNotPermitted), errors.Is(err, ErrNotFound):
			http.Error(w, "permit refused: "+strings.TrimPrefix(err.Error(), "relay: "), http.StatusForbidden)
		default:
			http.Error(w, "permit check unavailable", http.StatusServiceUnavailable)
		}
	})
}
