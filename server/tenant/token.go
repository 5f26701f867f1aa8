package tenant

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redisx"
)

// Permission is what a token may do in its namespace.
type Permission string

// The permissions a token can carry.
const (
	PermPublish Permission = "publish" // publish jobs, read and cancel them
	PermConsume Permission = "consume" // consume, ack, nack and touch jobs
	PermManage  Permission = "manage"  // pause, resume and delete queues, work the dead letter
	// PermTasks: submit tasks to the request queue (relay), read, cancel and finish them. Its own
	// permission, so that a token handed to a front end can queue calls but not touch jobs.
	PermTasks Permission = "tasks"
	// PermTasksDelegate: the body's subject of a submitted task names who the task is for, for
	// the backend that submits on behalf of its end users (it is scoped under the token, so two
	// tokens' "alice" are two subjects). Without it a task's fairness subject is the token itself:
	// a client that could name its own subject could take a new one for every task. Given only
	// by name: a token created without a permission list does not carry it.
	PermTasksDelegate Permission = "tasks:delegate"
)

// AllPermissions are the permissions of a token created without a list.
var AllPermissions = []Permission{PermPublish, PermConsume, PermManage, PermTasks}

// KnownPermissions are every permission a token can carry: AllPermissions, then those given only
// by name.
var KnownPermissions = append(slices.Clone(AllPermissions), PermTasksDelegate)

// Token is a namespace token as stored (its secret is not: only its SHA-256).
type Token struct {
	// ID names the token in lists and revocations; it is not a secret.
	ID          string       `json:"id"`
	Namespace   string       `json:"namespace"`
	Description string       `json:"description"`
	Permissions []Permission `json:"permissions"`
	// MaxPriority caps the priority of jobs published and tasks submitted with the token; -1:
	// none set (jobs: no cap; tasks: the server's default cap, 0 unless configured).
	MaxPriority int       `json:"max_priority"`
	CreatedAt   time.Time `json:"created_at"`
}

// Allows reports whether the token carries p.
func (t Token) Allows(p Permission) bool { return slices.Contains(t.Permissions, p) }

// CreateTokenParams describe a new token.
type CreateTokenParams struct {
	Namespace   string
	Description string
	// Permissions of the token; nil: all of them.
	Permissions []Permission
	// MaxPriority caps the priority of jobs published and tasks submitted with the token
	// (0..255); nil: none set (jobs: no cap; tasks: the server's default cap).
	MaxPriority *int
	// Secret is the token's secret when the caller chooses it (CheckSecret says which are
	// accepted), so that clients holding a token of another system keep it; "": a random one.
	Secret string
	// MaxTokens is the namespace's quota of tokens: Create refuses with a *sluice.QuotaError when
	// the namespace holds that many, checked atomically with the write. 0: the quota of the
	// store's QuotaStore (UseQuotas), or none.
	MaxTokens int64
}

// permissionList names KnownPermissions in error messages.
var permissionList = func() string {
	names := make([]string, len(KnownPermissions))
	for i, pm := range KnownPermissions {
		names[i] = string(pm)
	}
	return strings.Join(names, ", ")
}()

// TokenStore keeps namespace tokens in Redis, hashed, and caches lookups in-process for at most
// its TTL, which bounds how long a revoked token keeps working on any instance.
type TokenStore struct {
	rdb        redis.UniversalClient
	keys       keys
	key        string // hash: token id -> record JSON
	scripts    *redisx.ScriptRunner
	quotas     *QuotaStore    // nil: no quota of tokens but CreateTokenParams.MaxTokens
	deletions  *DeletionStore // nil: no namespace is ever being deleted
	namespaces *NamespaceStore
	now        func() time.Time
	cache      *lookupCache[Token] // secret hash -> token
}

// tokenRecord is a token as stored: the Token plus the SHA-256 of its secret.
type tokenRecord struct {
	Token
	Hash string `json:"hash"`
}

// secretPrefix starts every token secret, so secrets are recognisable in configs and logs.
const secretPrefix = "sk_"

// idLen is the length of a token id: the first hex digits of the SHA-256 of the secret.
const idLen = 16

// NewTokenStore returns the token store under prefix.
func NewTokenStore(rdb redis.UniversalClient, prefix string, namespaces *NamespaceStore, cacheTTL time.Duration) *TokenStore {
	k := newKeys(prefix)
	return &TokenStore{
		rdb:        rdb,
		keys:       k,
		key:        k.tokens,
		scripts:    redisx.NewScriptRunner(library, rdb, nil, "tenant"),
		namespaces: namespaces,
		now:        time.Now,
		cache:      newLookupCache[Token](cacheTTL),
	}
}

// UseQuotas makes Create hold each namespace to its quota of tokens (Quotas.MaxTokens).
func (s *TokenStore) UseQuotas(q *QuotaStore) { s.quotas = q }

// UseDeletions makes Authenticate and Create refuse a namespace that is being deleted
// (ErrNamespaceDeleting), for at most the deletion store's cache TTL after the deletion starts.
func (s *TokenStore) UseDeletions(d *DeletionStore) { s.deletions = d }

// refuseDeleting returns ErrNamespaceDeleting when namespace ns is being deleted.
func (s *TokenStore) refuseDeleting(ctx context.Context, ns string) error {
	if s.deletions == nil {
		return nil
	}
	on, err := s.deletions.Deleting(ctx, ns)
	if err == nil && on {
		err = ErrNamespaceDeleting
	}
	return err
}

// IDOf is the id of the token whose secret is secret: the first 16 hex digits of its SHA-256.
// Tools that know a secret (an import) name the token by it without sending the secret.
func IDOf(secret string) string { return hashSecret(secret)[:idLen] }

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Create makes a token for a namespace, registering the namespace when it is new, and returns
// the secret (shown once: only its hash is stored).
func (s *TokenStore) Create(ctx context.Context, p CreateTokenParams) (string, Token, error) {
	if !ValidName(p.Namespace) {
		return "", Token{}, invalidArg("namespace", "%q %s", p.Namespace, NameRule)
	}
	perms := p.Permissions
	if perms == nil {
		perms = AllPermissions
	}
	if len(perms) == 0 {
		return "", Token{}, invalidArg("permissions", "name at least one of %s", permissionList)
	}
	seen := map[Permission]bool{}
	for _, pm := range perms {
		if !slices.Contains(KnownPermissions, pm) {
			return "", Token{}, invalidArg("permissions", "%q is not one of %s", pm, permissionList)
		}
		seen[pm] = true
	}
	clean := make([]Permission, 0, len(seen))
	for _, pm := range KnownPermissions {
		if seen[pm] {
			clean = append(clean, pm)
		}
	}
	maxPrio := -1
	if p.MaxPriority != nil {
		if *p.MaxPriority < 0 || *p.MaxPriority > 255 {
			return "", Token{}, invalidArg("max_priority", "%d is outside 0..255", *p.MaxPriority)
		}
		maxPrio = *p.MaxPriority
	}
	if len(p.Description) > 1024 {
		return "", Token{}, invalidArg("description", "longer than 1024 bytes")
	}
	if p.Secret != "" {
		if err := CheckSecret(p.Secret); err != nil {
			return "", Token{}, err
		}
		// An existing secret changes nothing, not even the namespace registry (store checks
		// again, atomically).
		h := hashSecret(p.Secret)
		if old, found, err := s.load(ctx, h[:idLen]); err != nil {
			return "", Token{}, err
		} else if found && old.Hash == h {
			return "", Token{}, ErrTokenExists
		}
	}
	if err := s.refuseDeleting(ctx, p.Namespace); err != nil {
		return "", Token{}, err
	}
	if p.MaxTokens == 0 && s.quotas != nil {
		q, err := s.quotas.Of(ctx, p.Namespace)
		if err != nil {
			return "", Token{}, err
		}
		p.MaxTokens = q.MaxTokens
	}
	if err := s.namespaces.ensure(ctx, p.Namespace); err != nil {
		return "", Token{}, err
	}
	if p.Secret != "" {
		tok, err := s.store(ctx, p.Secret, p, clean, maxPrio)
		switch {
		case errors.Is(err, errIDTaken):
			return "", Token{}, invalidArg("secret", "another token has the same id (the first 16 hex digits of "+
				"the secret's SHA-256): choose another secret")
		case err != nil:
			return "", Token{}, err
		}
		return p.Secret, tok, nil
	}
	for range 3 {
		var raw [24]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", Token{}, fmt.Errorf("token: random: %w", err)
		}
		secret := secretPrefix + hex.EncodeToString(raw[:])
		tok, err := s.store(ctx, secret, p, clean, maxPrio)
		if errors.Is(err, errIDTaken) {
			continue
		}
		return secret, tok, err
	}
	return "", Token{}, errors.New("token: could not find a free id")
}

// errIDTaken is store's answer when another secret has the new secret's id (its SHA-256 prefix).
var errIDTaken = errors.New("token: id taken")

// store writes the record of a new token with secret and adds it to its namespace's index, in one
// script, unless its id is taken (ErrTokenExists when by the same secret, errIDTaken when by
// another) or the namespace is at its quota of tokens (*sluice.QuotaError). It forgets a cached
// "unknown" for the secret, so a chosen secret works at once on this instance.
func (s *TokenStore) store(ctx context.Context, secret string, p CreateTokenParams, perms []Permission, maxPrio int) (Token, error) {
	h := hashSecret(secret)
	rec := tokenRecord{
		Token: Token{
			ID:          h[:idLen],
			Namespace:   p.Namespace,
			Description: p.Description,
			Permissions: perms,
			MaxPriority: maxPrio,
			CreatedAt:   s.now().UTC().Truncate(time.Millisecond),
		},
		Hash: h,
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return Token{}, fmt.Errorf("token: %w", err)
	}
	keys := []string{s.key, s.keys.tokenIndex(p.Namespace)}
	res, err := s.scripts.Run(ctx, "token_create", keys, rec.ID, b, tokenIndexMember(rec.Token), p.MaxTokens).Int64()
	if err != nil {
		return Token{}, fmt.Errorf("token: create: %w", err)
	}
	switch res {
	case -1:
		return Token{}, &sluice.QuotaError{Namespace: p.Namespace, Quota: "max_tokens", Limit: p.MaxTokens}
	case 0:
		old, found, err := s.load(ctx, rec.ID)
		switch {
		case err != nil:
			return Token{}, err
		case found && old.Hash == h:
			return Token{}, ErrTokenExists
		default:
			return Token{}, errIDTaken
		}
	}
	s.cache.forget(h)
	return rec.Token, nil
}

// Authenticate returns the token of a secret, or ErrUnauthenticated when it is unknown or
// revoked. Lookups are cached for the store's TTL (revocations take effect within it).
func (s *TokenStore) Authenticate(ctx context.Context, secret string) (Token, error) {
	if secret == "" || len(secret) > 512 {
		return Token{}, ErrUnauthenticated
	}
	h := hashSecret(secret)
	tok, found, err := s.cache.lookup(h, func() (Token, bool, error) {
		rec, found, err := s.load(ctx, h[:idLen])
		return rec.Token, found && rec.Hash == h, err
	})
	if err != nil {
		return Token{}, err
	}
	if !found {
		return Token{}, ErrUnauthenticated
	}
	if err := s.refuseDeleting(ctx, tok.Namespace); err != nil {
		return Token{}, err
	}
	return tok, nil
}

func (s *TokenStore) load(ctx context.Context, id string) (tokenRecord, bool, error) {
	return readRecord[tokenRecord](ctx, s.rdb, s.key, id, "token")
}

// List returns the tokens of a namespace, oldest first ("" lists every namespace's, reading the
// whole token hash: for tools and tests, never for a page). It reads the namespace's index, so it
// costs what the namespace holds, not what every namespace holds; Page reads it a page at a time.
func (s *TokenStore) List(ctx context.Context, ns string) ([]Token, error) {
	if ns != "" {
		return s.listNamespace(ctx, ns)
	}
	recs, err := readRecords[tokenRecord](ctx, s.rdb, s.key, "token")
	if err != nil {
		return nil, err
	}
	out := []Token{}
	for _, rec := range recs {
		out = append(out, rec.Token)
	}
	slices.SortFunc(out, func(a, b Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Find returns the token of namespace ns named by its secret or its id, or a not_found error.
func (s *TokenStore) Find(ctx context.Context, ns, secretOrID string) (Token, error) {
	id := secretOrID
	if !isTokenID(secretOrID) {
		id = hashSecret(secretOrID)[:idLen]
	}
	rec, found, err := s.load(ctx, id)
	if err != nil {
		return Token{}, err
	}
	if !found || rec.Namespace != ns {
		return Token{}, notFound("no such token in namespace " + ns)
	}
	return rec.Token, nil
}

// Revoke deletes a token of namespace ns named by its secret or its id. It returns ErrNotFound
// when the namespace has no such token. Other instances stop accepting it within their cache TTL.
func (s *TokenStore) Revoke(ctx context.Context, ns, secretOrID string) error {
	id := secretOrID
	if !isTokenID(secretOrID) {
		id = hashSecret(secretOrID)[:idLen]
	}
	rec, found, err := s.load(ctx, id)
	if err != nil {
		return err
	}
	if !found || rec.Namespace != ns {
		return notFound("no such token in namespace " + ns)
	}
	if _, err := s.revoke(ctx, ns, []string{tokenIndexMember(rec.Token)}); err != nil {
		return err
	}
	s.cache.forget(rec.Hash)
	return nil
}

// RevokeNamespace deletes every token of ns, a batch per script call, and returns how many.
func (s *TokenStore) RevokeNamespace(ctx context.Context, ns string) (int, error) {
	total := 0
	for {
		n, err := s.RevokeBatch(ctx, ns)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// RevokeBatch deletes up to revokeBatch tokens of ns in one script call and returns how many
// (0: the namespace holds none). Each instance stops accepting them within its cache TTL.
func (s *TokenStore) RevokeBatch(ctx context.Context, ns string) (int, error) {
	page, _, err := s.indexPage(ctx, ns, "", revokeBatch)
	if err != nil || len(page) == 0 {
		return 0, err
	}
	n, err := s.revoke(ctx, ns, page)
	s.cache.forgetAll()
	if err == nil && n == 0 {
		n = len(page) // index entries of records already gone: progress all the same
	}
	return n, err
}

// revokeBatch is how many tokens one call of token_revoke.lua deletes.
const revokeBatch = 500

// revoke deletes the tokens of namespace ns whose index members are given (records and index
// entries) in one script call and returns how many records there were.
func (s *TokenStore) revoke(ctx context.Context, ns string, members []string) (int, error) {
	argv := make([]any, 0, 2*len(members))
	for _, m := range members {
		argv = append(argv, memberID(m), m)
	}
	n, err := s.scripts.Run(ctx, "token_revoke", []string{s.key, s.keys.tokenIndex(ns)}, argv...).Int()
	if err != nil {
		return 0, fmt.Errorf("token: revoke: %w", err)
	}
	return n, nil
}

// isTokenID reports whether s has the shape of a token id (16 lowercase hex digits).
func isTokenID(s string) bool {
	if len(s) != idLen {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
