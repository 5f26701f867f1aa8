package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"

	"github.com/sluicehq/sluice/internal/version"
)

// lmstfy's admin routes. Tokens are Sluice's namespace tokens (stored hashed, with every
// permission when made here); a token is named in paths by its secret or its id.

// lmstfyIndentedJSON answers as lmstfy's admin routes do (gin's IndentedJSON).
func lmstfyIndentedJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		b = []byte(`{"error":"internal error"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// lmstfyPoolOK reports whether the request names no pool or lmstfy's default one, which is the
// only pool Sluice has; otherwise it answers 400 with lmstfy's message.
func lmstfyPoolOK(w http.ResponseWriter, r *http.Request, pool string) bool {
	if pool == "" || pool == lmstfyPool {
		return true
	}
	lmstfyError(w, r, http.StatusBadRequest, "the pool was not exists")
	return false
}

// lmstfyListTokens is GET /token/{ns}: {"tokens": {id: description}}. lmstfy keys the map by the
// token secrets; Sluice stores only their hashes, so it lists the token ids.
func (s *Server) lmstfyListTokens(w http.ResponseWriter, r *http.Request) {
	if !lmstfyPoolOK(w, r, r.URL.Query().Get("pool")) {
		return
	}
	ns := r.PathValue("ns")
	tokens := map[string]string{}
	if validName(ns) {
		list, err := s.tokens.List(r.Context(), ns)
		if err != nil {
			lmstfyFail(w, r, err)
			return
		}
		for _, t := range list {
			tokens[t.ID] = t.Description
		}
	}
	lmstfyIndentedJSON(w, http.StatusOK, map[string]any{"tokens": tokens})
}

// lmstfyNewToken is POST /token/{ns}?description=: a new token with every permission of the
// namespace, 201 {"token": secret}. The description may also come as a form field.
func (s *Server) lmstfyNewToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		lmstfyError(w, r, http.StatusBadRequest, "invalid form")
		return
	}
	ns := r.PathValue("ns")
	desc := r.Form.Get("description")
	if desc == "" {
		lmstfyError(w, r, http.StatusBadRequest, "invalid description")
		return
	}
	if r.Form.Get("token") != "" {
		lmstfyError(w, r, http.StatusBadRequest, "a chosen token is not supported: Sluice makes every token secret")
		return
	}
	if len(ns) > 255 {
		lmstfyError(w, r, http.StatusBadRequest, "the namespace name was too long")
		return
	}
	if !validName(ns) {
		lmstfyError(w, r, http.StatusBadRequest, "namespace name contains forbidden characters")
		return
	}
	pool := r.URL.Query().Get("pool")
	if !lmstfyPoolOK(w, r, pool) {
		return
	}
	secret, _, err := s.tokens.Create(r.Context(), CreateTokenParams{Namespace: ns, Description: desc})
	if err != nil {
		lmstfyFail(w, r, err)
		return
	}
	if pool != "" { // lmstfy names the pool in the token when the request named one
		secret = pool + ":" + secret
	}
	lmstfyIndentedJSON(w, http.StatusCreated, map[string]string{"token": secret})
}

// lmstfyDeleteToken is DELETE /token/{ns}/{token}: revoke the token (named by its secret or id)
// and drop its limit. 204 also when there was no such token, as lmstfy answers.
func (s *Server) lmstfyDeleteToken(w http.ResponseWriter, r *http.Request) {
	ns := r.PathValue("ns")
	pool, name := lmstfySplitToken(r.PathValue("token"))
	if !lmstfyPoolOK(w, r, pool) {
		return
	}
	id, found, err := s.lmstfyTokenID(r.Context(), ns, name)
	if err != nil {
		lmstfyFail(w, r, err)
		return
	}
	if found {
		if err := s.tokens.Revoke(r.Context(), ns, id); err != nil && !errors.Is(err, ErrNotFound) {
			lmstfyFail(w, r, err)
			return
		}
		if err := s.limits.remove(r.Context(), ns, id); err != nil {
			lmstfyFail(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// lmstfyTokenID finds a token of ns by its secret or its id; found is false when ns has none such.
func (s *Server) lmstfyTokenID(ctx context.Context, ns, secretOrID string) (id string, found bool, err error) {
	if !validName(ns) || secretOrID == "" {
		return "", false, nil
	}
	tok, err := s.tokens.Authenticate(ctx, secretOrID)
	switch {
	case err == nil:
		return tok.ID, tok.Namespace == ns, nil
	case !errors.Is(err, ErrUnauthenticated):
		return "", false, err
	}
	list, err := s.tokens.List(ctx, ns)
	if err != nil {
		return "", false, err
	}
	for _, t := range list {
		if t.ID == secretOrID {
			return t.ID, true, nil
		}
	}
	return "", false, nil
}

// lmstfyLimitToken resolves the {ns}/{token} of a limit route; it answers the request itself
// (pool or token unknown) when ok is false.
func (s *Server) lmstfyLimitToken(w http.ResponseWriter, r *http.Request, missing func()) (Token, bool) {
	ns := r.PathValue("ns")
	pool, name := lmstfySplitToken(r.PathValue("token"))
	if !lmstfyPoolOK(w, r, pool) {
		return Token{}, false
	}
	id, found, err := s.lmstfyTokenID(r.Context(), ns, name)
	if err != nil {
		lmstfyFail(w, r, err)
		return Token{}, false
	}
	if !found {
		missing()
		return Token{}, false
	}
	return Token{ID: id, Namespace: ns}, true
}

// lmstfyGetLimit is GET /token/{ns}/{token}/limit: the limit, or 404 with a null body.
func (s *Server) lmstfyGetLimit(w http.ResponseWriter, r *http.Request) {
	notFound := func() { writeJSON(w, http.StatusNotFound, nil) }
	tok, ok := s.lmstfyLimitToken(w, r, notFound)
	if !ok {
		return
	}
	l, found, err := s.limits.get(r.Context(), tok.Namespace, tok.ID)
	if err != nil {
		lmstfyFail(w, r, err)
		return
	}
	if !found {
		notFound()
		return
	}
	writeJSON(w, http.StatusOK, l)
}

// lmstfyReadLimit decodes and checks the JSON body of the POST and PUT limit routes.
func lmstfyReadLimit(w http.ResponseWriter, r *http.Request) (tokenLimit, bool) {
	var l tokenLimit
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&l); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			lmstfyError(w, r, http.StatusRequestEntityTooLarge, "body too large")
			return l, false
		}
		lmstfyError(w, r, http.StatusBadRequest, "invalid limiter: "+err.Error())
		return l, false
	}
	if _, msg := l.problem(); msg != "" {
		lmstfyError(w, r, http.StatusBadRequest, msg)
		return l, false
	}
	return l, true
}

// lmstfyAddLimit is POST /token/{ns}/{token}/limit: set a limit the token does not have yet.
func (s *Server) lmstfyAddLimit(w http.ResponseWriter, r *http.Request) {
	s.lmstfyStoreLimit(w, r, false)
}

// lmstfySetLimit is PUT /token/{ns}/{token}/limit: set or replace the token's limit.
func (s *Server) lmstfySetLimit(w http.ResponseWriter, r *http.Request) {
	s.lmstfyStoreLimit(w, r, true)
}

func (s *Server) lmstfyStoreLimit(w http.ResponseWriter, r *http.Request, replace bool) {
	l, ok := lmstfyReadLimit(w, r)
	if !ok {
		return
	}
	tok, ok := s.lmstfyLimitToken(w, r, func() { lmstfyError(w, r, http.StatusNotFound, "token not found") })
	if !ok {
		return
	}
	added, err := s.limits.set(r.Context(), tok.Namespace, tok.ID, l, replace)
	switch {
	case err != nil:
		lmstfyFail(w, r, err)
	case replace:
		writeJSON(w, http.StatusOK, map[string]tokenLimit{"limiter": l})
	case !added:
		lmstfyError(w, r, http.StatusBadRequest, "the token already has a limit (PUT replaces it)")
	default:
		writeJSON(w, http.StatusCreated, map[string]tokenLimit{"limiter": l})
	}
}

// lmstfyDeleteLimit is DELETE /token/{ns}/{token}/limit: 200 {"msg": "success"}, also when the
// token had no limit.
func (s *Server) lmstfyDeleteLimit(w http.ResponseWriter, r *http.Request) {
	success := func() { writeJSON(w, http.StatusOK, map[string]string{"msg": "success"}) }
	tok, ok := s.lmstfyLimitToken(w, r, success)
	if !ok {
		return
	}
	if err := s.limits.remove(r.Context(), tok.Namespace, tok.ID); err != nil {
		lmstfyFail(w, r, err)
		return
	}
	success()
}

// lmstfyTokenLimitEntry is one entry of GET /limits.
type lmstfyTokenLimitEntry struct {
	Namespace string     `json:"namespace"`
	Token     string     `json:"token"` // the token id (lmstfy shows the secret)
	Limiter   tokenLimit `json:"limiter"`
}

// lmstfyListLimits is GET /limits: every token's limit. force_update is accepted and has nothing
// to do: this route reads Redis, and the servers' caches of limits last under a second.
func (s *Server) lmstfyListLimits(w http.ResponseWriter, r *http.Request) {
	all, err := s.limits.list(r.Context())
	if err != nil {
		lmstfyFail(w, r, err)
		return
	}
	out := make([]lmstfyTokenLimitEntry, len(all))
	for i, e := range all {
		out[i] = lmstfyTokenLimitEntry{Namespace: e.Namespace, Token: e.ID, Limiter: e.Limit}
	}
	writeJSON(w, http.StatusOK, out)
}

// lmstfyKindOK checks lmstfy's ?kind= (engine kind; default redis). Sluice's one pool counts as
// lmstfy's redis engine.
func lmstfyKindOK(w http.ResponseWriter, r *http.Request) (redisKind, ok bool) {
	switch r.URL.Query().Get("kind") {
	case "", "redis":
		return true, true
	case "redis_v2", "migration":
		return false, true
	}
	lmstfyError(w, r, http.StatusBadRequest, "invalid kind")
	return false, false
}

// lmstfyPools is GET /pools?kind=: the pool names, ["default"].
func (s *Server) lmstfyPools(w http.ResponseWriter, r *http.Request) {
	redisKind, ok := lmstfyKindOK(w, r)
	if !ok {
		return
	}
	pools := []string{}
	if redisKind {
		pools = append(pools, lmstfyPool)
	}
	lmstfyIndentedJSON(w, http.StatusOK, pools)
}

// lmstfyInfo is GET /info?pool=&kind=: every namespace with its queues.
func (s *Server) lmstfyInfo(w http.ResponseWriter, r *http.Request) {
	redisKind, ok := lmstfyKindOK(w, r)
	if !ok {
		return
	}
	if !lmstfyPoolOK(w, r, r.URL.Query().Get("pool")) {
		return
	}
	info := map[string][]string{}
	if redisKind {
		nss, err := s.queue.Namespaces(r.Context())
		if err != nil {
			lmstfyFail(w, r, err)
			return
		}
		for _, ns := range nss {
			qs, err := s.queue.Queues(r.Context(), ns)
			if err != nil {
				lmstfyFail(w, r, err)
				return
			}
			info[ns] = qs
		}
	}
	lmstfyIndentedJSON(w, http.StatusOK, info)
}

// lmstfyVersion is GET /version: {"version", "build_commit", "build_date"}.
func (s *Server) lmstfyVersion(w http.ResponseWriter, _ *http.Request) {
	v := version.Get()
	date := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, st := range bi.Settings {
			if st.Key == "vcs.time" {
				date = st.Value
			}
		}
	}
	lmstfyIndentedJSON(w, http.StatusOK, map[string]string{
		"version": v.Version, "build_commit": v.Commit, "build_date": date,
	})
}
