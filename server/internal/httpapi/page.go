package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
)

// A listing's page is asked for with ?cursor=&limit= and answered with "next_cursor" (null on the
// last page). The cursor is opaque to clients: the base64url of the listing's kind, the scope
// it lists (a namespace) and the position in it. Decoding checks the kind and the scope, so a
// cursor of one listing or one namespace is refused (400, field "cursor") at any other, and a
// forged one never names a position the caller could not reach by paging: the position is read
// from the caller's own scope only.

// DefaultPageLimit is the number of entries a page holds when the request names no limit.
const DefaultPageLimit = 100

// MaxPageLimit is the most entries a page may hold.
const MaxPageLimit = 1000

// PageRequest is a page asked for: the position to start after ("" for the first page) and the
// most entries to return.
type PageRequest struct {
	After string
	Limit int
}

// EncodeCursor is the cursor that continues listing kind in scope after position pos.
func EncodeCursor(kind, scope, pos string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + scope + "\x00" + pos))
}

// ReadPage reads ?cursor= (made by EncodeCursor for kind and scope) and ?limit= (1..MaxPageLimit,
// default DefaultPageLimit). A cursor that does not decode, or was made for another kind or
// scope, is 400 invalid_argument naming "cursor".
func ReadPage(r *http.Request, kind, scope string) (PageRequest, error) {
	q := r.URL.Query()
	p := PageRequest{Limit: DefaultPageLimit}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxPageLimit {
			return p, InvalidArg("limit", "%q is not a number in 1..%d", l, MaxPageLimit)
		}
		p.Limit = n
	}
	c := q.Get("cursor")
	if c == "" {
		return p, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	parts := strings.SplitN(string(raw), "\x00", 3)
	if err != nil || len(parts) != 3 || parts[0] != kind || parts[2] == "" {
		return p, InvalidArg("cursor", "not a cursor of this listing: send the next_cursor of the previous page")
	}
	if parts[1] != scope {
		return p, InvalidArg("cursor", "the cursor is of another listing: send the next_cursor of the previous page")
	}
	p.After = parts[2]
	return p, nil
}

// NextCursor is the "next_cursor" member of a page's answer: the cursor after pos, or nil (JSON
// null) when pos is "" (the page is the last).
func NextCursor(kind, scope, pos string) *string {
	if pos == "" {
		return nil
	}
	c := EncodeCursor(kind, scope, pos)
	return &c
}
