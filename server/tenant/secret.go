package tenant

import (
	"errors"
	"fmt"
)

// ErrTokenExists is the error of creating a token with a secret that is already a token's (of
// any namespace). Nothing changes then.
var ErrTokenExists = errors.New("a token with this secret exists already")

// The bounds of a chosen secret. The minimum is lmstfy's ("the user token was too short"), so
// every token lmstfy accepted can be carried over; the maximum is what Authenticate looks up.
const (
	MinSecretLen = 20
	MaxSecretLen = 512
)

// SecretRule says which chosen secrets are accepted, for error messages and docs.
//
//nolint:gosec // G101 reads "Secret" in the name: this is a rule for people, not a credential.
const SecretRule = "20 to 512 bytes of printable ASCII (no spaces or control characters) without ':'"

// CheckSecret reports why a chosen secret cannot be a token's, or nil when it can. A secret is
// what clients send in headers and query strings, and lmstfy's clients put a pool name before a
// ':', so it is printable ASCII without spaces and without ':'.
func CheckSecret(secret string) error {
	switch {
	case len(secret) < MinSecretLen:
		return invalidArg("secret", "%d bytes is too short: a chosen secret is %s", len(secret), SecretRule)
	case len(secret) > MaxSecretLen:
		return invalidArg("secret", "%d bytes is too long: a chosen secret is %s", len(secret), SecretRule)
	}
	for i := 0; i < len(secret); i++ {
		c := secret[i]
		if c < '!' || c > '~' || c == ':' {
			return invalidArg("secret", "byte %d (%s) is not allowed: a chosen secret is %s", i, describeByte(c), SecretRule)
		}
	}
	return nil
}

func describeByte(c byte) string {
	if c >= '!' && c <= '~' {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("0x%02x", c)
}
