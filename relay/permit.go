package relay

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/outbound"
)

// An online task's permit says "task T of endpoint E may make one call until X", and only at E: a
// check names the endpoint it guards and a permit of another endpoint is refused. It is signed
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

// PermitCall is the call a permit is presented for, as the endpoint's gateway sees it.
type PermitCall struct {
	// Endpoint names the endpoint the gateway guards, from the gateway's own configuration (never
	// from the caller's request). Required: a permit admits calls to the endpoint it was issued
	// for and no other.
	Endpoint string
	// Method and Path are the call's HTTP method and request path (as the request line carries
	// it; a query is ignored). They are required when the endpoint binds its permits to methods
	// (Endpoint.PermitMethods) or a path prefix (Endpoint.PermitPathPrefix), and ignored otherwise.
	Method, Path string
}

// CheckPermit admits one call: it verifies the permit's signature and that it was issued for
// call's endpoint (and admits its method and path, when the endpoint binds them), then marks it
// used in Redis in one script, so of two checks of one permit only the first succeeds. Errors:
// a *sluice.FieldError (no endpoint named, or a method or path the endpoint needs missing),
// ErrPermitInvalid (malformed, forged, of an earlier turn), ErrPermitMismatch (for another
// endpoint, method or path: the permit stays unused), ErrPermitExpired, ErrPermitUsed,
// ErrNotPermitted (the task was cancelled or has ended), ErrNotFound (the endpoint was deleted).
// This is what an nginx auth_request handler calls.
func (c *Client) CheckPermit(ctx context.Context, permit string, call PermitCall) (PermitInfo, error) {
	if !validName(call.Endpoint) {
		return PermitInfo{}, fieldErr("endpoint", "name the endpoint the permit is presented at: it %s", nameRule)
	}
	info, exp, err := c.parsePermit(permit)
	if err != nil {
		return PermitInfo{}, err
	}
	if info.Endpoint != call.Endpoint {
		return PermitInfo{}, fmt.Errorf("%w: the permit is for endpoint %q, not %q", ErrPermitMismatch, info.Endpoint, call.Endpoint)
	}
	if !time.Now().Before(info.Expires) {
		return PermitInfo{}, ErrPermitExpired
	}
	e, err := c.Endpoint(ctx, info.Endpoint)
	if err != nil {
		return PermitInfo{}, err
	}
	if err := e.admits(call); err != nil {
		return PermitInfo{}, err
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

// admits checks call's method and path against the endpoint's permit bindings.
func (e Endpoint) admits(call PermitCall) error {
	if len(e.PermitMethods) > 0 {
		if call.Method == "" {
			return fieldErr("method", "endpoint %q binds its permits to methods: say the call's method", e.Name)
		}
		if !slices.Contains(e.PermitMethods, call.Method) {
			return fmt.Errorf("%w: endpoint %q admits %s calls with a permit, not %.16q", ErrPermitMismatch, e.Name,
				strings.Join(e.PermitMethods, ", "), call.Method)
		}
	}
	if e.PermitPathPrefix != "" {
		if call.Path == "" {
			return fieldErr("path", "endpoint %q binds its permits to a path: say the call's path", e.Name)
		}
		if !outbound.UnderPath(call.Path, e.PermitPathPrefix) {
			return fmt.Errorf("%w: endpoint %q admits calls under %s with a permit, not %.256q", ErrPermitMismatch, e.Name,
				e.PermitPathPrefix, call.Path)
		}
	}
	return nil
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
	CheckPermit(ctx context.Context, permit string, call PermitCall) (PermitInfo, error)
}

var _ PermitChecker = (*Client)(nil)

type permitKey struct{}

// PermitFrom returns the permit RequirePermit admitted the request with.
func PermitFrom(ctx context.Context) (PermitInfo, bool) {
	p, ok := ctx.Value(permitKey{}).(PermitInfo)
	return p, ok
}

// RequirePermit is net/http middleware for an endpoint (or its gateway): a request passes only
// with a valid, unused permit of the named endpoint in the Sluice-Permit header (or
// "Authorization: Permit <token>"), which it uses up. The request's method and path (r.URL as
// this handler sees it) are checked against the endpoint's PermitMethods and PermitPathPrefix.
// Missing permits get 401; forged, reused, expired ones and those of another endpoint, method or
// path 403; a Redis failure 503. The handler finds the permit with PermitFrom. It panics when
// endpoint is not a valid endpoint name (a configuration error, caught at start).
func RequirePermit(checker PermitChecker, endpoint string, next http.Handler) http.Handler {
	if !validName(endpoint) {
		panic(fmt.Sprintf("relay: RequirePermit: endpoint %q: %s", endpoint, nameRule))
	}
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
		info, err := checker.CheckPermit(r.Context(), token, PermitCall{Endpoint: endpoint, Method: r.Method, Path: r.URL.RequestURI()})
		switch {
		case err == nil:
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), permitKey{}, info)))
		case errors.Is(err, ErrPermitInvalid), errors.Is(err, ErrPermitExpired), errors.Is(err, ErrPermitUsed),
			errors.Is(err, ErrPermitMismatch), errors.Is(err, ErrNotPermitted), errors.Is(err, ErrNotFound):
			http.Error(w, "permit refused: "+strings.TrimPrefix(err.Error(), "relay: "), http.StatusForbidden)
		default:
			http.Error(w, "permit check unavailable", http.StatusServiceUnavailable)
		}
	})
}
