package waitroom

import (
	"net/http"
	"strconv"
)

// JWKSPath is the public route of Client.JWKS.
const JWKSPath = "/v1/rooms/jwks.json"

// jwksMaxAge is how long a verifier may cache the key set (Cache-Control). A key is published
// at least this long before it signs (docs/waitroom.md, "Token passes"), so a verifier's cached
// set always holds the key of a fresh pass.
const jwksMaxAge = 300

// JWKS returns the JSON Web Key Set (RFC 7517) of the public keys that verify token passes,
// served at JWKSPath, or nil when the Client issues HMAC passes (Config.PassTokenKeys empty).
func (c *Client) JWKS() []byte {
	if c.tokens == nil {
		return nil
	}
	return c.tokens.jwks
}

// JWKS is GET /v1/rooms/jwks.json: the key set, or 404 (not_found) when passes are not tokens.
func (h *Handler) JWKS(w http.ResponseWriter, _ *http.Request) error {
	set := h.c.JWKS()
	if set == nil {
		return &HTTPError{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: "this server issues HMAC passes, which only it can check; token passes (and their keys) are off"}
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(jwksMaxAge))
	_, _ = w.Write(set)
	return nil
}
