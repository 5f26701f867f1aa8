package server

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// The admin token's rules (checkAdminToken). The token opens every namespace, the dashboard and
// lmstfy's admin routes, and a guess costs an attacker one request: it must not be guessable in
// any number of requests a failed-authentication limit lets through.
const (
	minAdminTokenLen      = 24
	minAdminTokenDistinct = 10
)

// adminTokenPlaceholders are pieces of the example files' placeholders: a token holding one was
// copied from an example, which anyone can read.
var adminTokenPlaceholders = []string{"change-me", "changeme", "change_me"}

// NewAdminToken returns a strong random secret: 32 random bytes in unpadded base64url (43
// characters). `sluice token gen` prints one; it suits admin_token, room_pass_keys and
// relay_permit_keys alike.
func NewAdminToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// checkAdminToken says why token is too weak to be the admin token, or returns nil. The error
// names the setting in its three spellings and carries a strong token made on the spot.
func checkAdminToken(token string) error {
	var why string
	distinct := map[byte]bool{}
	for i := 0; i < len(token); i++ {
		distinct[token[i]] = true
	}
	lower := strings.ToLower(token)
	switch {
	case len(token) < minAdminTokenLen:
		why = fmt.Sprintf("it has %d characters, fewer than %d", len(token), minAdminTokenLen)
	case strings.IndexFunc(token, func(r rune) bool { return r < '!' || r > '~' }) >= 0:
		why = "it has a space, a control character or a character outside ASCII (clients send it in an HTTP header)"
	case len(distinct) < minAdminTokenDistinct:
		why = fmt.Sprintf("it uses only %d different characters, fewer than %d", len(distinct), minAdminTokenDistinct)
	case repeatedPiece(token) > 0:
		why = fmt.Sprintf("it is a piece of %d characters repeated", repeatedPiece(token))
	default:
		for _, p := range adminTokenPlaceholders {
			if strings.Contains(lower, p) {
				why = fmt.Sprintf("it holds %q, the placeholder of an example file", p)
			}
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("config: admin_token (flag --admin-token, environment SLUICE_ADMIN_TOKEN) is too weak: %s. "+
		"Use at least %d printable characters, %d of them different, drawn at random: for instance %s "+
		"(made just now; `sluice token gen` prints another)", why, minAdminTokenLen, minAdminTokenDistinct, NewAdminToken())
}

// repeatedPiece returns the length of the piece s repeats ("abcabcabc": 3), or 0 when s is not
// a shorter piece repeated (a last repetition may be cut short).
func repeatedPiece(s string) int {
	for n := 1; n <= len(s)/2; n++ {
		if s[n:] == s[:len(s)-n] {
			return n
		}
	}
	return 0
}
