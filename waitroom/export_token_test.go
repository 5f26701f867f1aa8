package waitroom

import (
	"net/http"
	"time"
)

// CheckPassUncached checks a pass as on its first sight in a process: signature and claims,
// without the cache of verified passes.
func (r *Room) CheckPassUncached(v string) (Pass, bool) {
	return r.c.checkPassValue(r.name, v, time.Now())
}

// RequestPass is the handlers' check of a request's pass: the cache, then a bound pass's cookie.
func (r *Room) RequestPass(req *http.Request) (Pass, bool) { return r.requestPass(req) }

// IssuePass signs a pass as an admission does.
func (r *Room) IssuePass(visitor, binding string, expires time.Time) string {
	return r.c.issuePass(r.name, visitor, binding, expires)
}
