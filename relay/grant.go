package relay

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// A priority grant lets an application's backend give one subject a higher priority than the
// submitter may ask for, without trusting the submitter: the backend signs (subject, priority,
// expiry) with a key it shares with Sluice (Config.GrantKeys), the client passes the grant
// through, and Submit lowers any higher number to what the grant (or the token's cap) allows.
//
// Format: "g1.<priority>.<expiry unix ms>.<base64url HMAC-SHA256 of
// "g1\n<subject>\n<priority>\n<expiry>">". The subject is not in the grant: it must be the
// task's Subject.

// SignGrant returns a grant of priority for subject until expiry, signed with key.
func SignGrant(key []byte, subject string, priority int, expiry time.Time) string {
	p, e := strconv.Itoa(priority), strconv.FormatInt(expiry.UnixMilli(), 10)
	return "g1." + p + "." + e + "." + base64.RawURLEncoding.EncodeToString(grantMAC(key, subject, p, e))
}

func grantMAC(key []byte, subject, priority, expiry string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("g1\n" + subject + "\n" + priority + "\n" + expiry))
	return m.Sum(nil)
}

// VerifyGrant returns the priority a grant allows subject at now, or ErrGrantInvalid (forged,
// malformed, expired, or for another subject). Any of keys may have signed it (rotation).
func VerifyGrant(keys [][]byte, grant, subject string, now time.Time) (int, error) {
	parts := strings.Split(grant, ".")
	if len(parts) != 4 || parts[0] != "g1" {
		return 0, ErrGrantInvalid
	}
	pri, err := strconv.Atoi(parts[1])
	if err != nil || pri < 0 || pri > MaxPriority {
		return 0, ErrGrantInvalid
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return 0, ErrGrantInvalid
	}
	mac, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil {
		return 0, ErrGrantInvalid
	}
	ok := false
	for _, k := range keys {
		// Every key is tried, so the time taken does not say which one matched.
		if hmac.Equal(mac, grantMAC(k, subject, parts[1], parts[2])) {
			ok = true
		}
	}
	if !ok || now.UnixMilli() >= exp {
		return 0, ErrGrantInvalid
	}
	return pri, nil
}

// effectivePriority lowers the asked priority to what the cap or a valid grant allows. An
// invalid grant is ignored (the cap still applies): a client cannot gain by forging one.
func (c *Client) effectivePriority(p SubmitParams) int {
	allowed := max(0, min(p.PriorityCap, MaxPriority))
	if p.Grant != "" && len(c.cfg.GrantKeys) > 0 {
		if g, err := VerifyGrant(c.cfg.GrantKeys, p.Grant, cmp.Or(p.GrantSubject, p.Subject), time.Now()); err == nil {
			allowed = max(allowed, g)
		} else {
			c.cfg.Logger.Debug("relay: priority grant refused", "error", err)
		}
	}
	return min(p.Priority, allowed)
}
