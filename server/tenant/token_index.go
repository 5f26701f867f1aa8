package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Each namespace's tokens are listed in an index of their own (keys.tokenIndex), so listing one
// namespace's tokens reads that namespace's entries only, a page at a time, however many tokens
// the other namespaces hold.

// MaxPage is the most entries one page of a listing holds.
const MaxPage = 1000

// tokenIndexMember is t's member in its namespace's index: its creation time in milliseconds,
// zero-padded so that lexical order is creation order, then its id.
func tokenIndexMember(t Token) string {
	return fmt.Sprintf("%013d:%s", t.CreatedAt.UnixMilli(), t.ID)
}

// memberID is the token id of an index member.
func memberID(m string) string {
	_, id, _ := strings.Cut(m, ":")
	return id
}

// ValidTokenCursor reports whether c has the shape of a position in a token index (what Page
// returns as next): anything else is refused before it reaches Redis.
func ValidTokenCursor(c string) bool {
	ms, id, ok := strings.Cut(c, ":")
	if !ok || len(ms) != 13 || !isTokenID(id) {
		return false
	}
	_, err := strconv.ParseUint(ms, 10, 64)
	return err == nil
}

// Page returns at most limit (1..MaxPage) tokens of namespace ns, oldest first, after the
// position after ("": from the start), and the position to ask for the next page from ("" when
// this page is the last). Entries whose record is gone are skipped.
func (s *TokenStore) Page(ctx context.Context, ns, after string, limit int) ([]Token, string, error) {
	if after != "" && !ValidTokenCursor(after) {
		return nil, "", invalidArg("cursor", "not a position in a token listing")
	}
	limit = min(max(limit, 1), MaxPage)
	members, next, err := s.indexPage(ctx, ns, after, limit)
	if err != nil || len(members) == 0 {
		return []Token{}, "", err
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = memberID(m)
	}
	raw, err := s.rdb.HMGet(ctx, s.key, ids...).Result()
	if err != nil {
		return nil, "", fmt.Errorf("token: list: %w", err)
	}
	out := make([]Token, 0, len(raw))
	for i, v := range raw {
		b, ok := v.(string)
		if !ok {
			continue
		}
		var rec tokenRecord
		if err := json.Unmarshal([]byte(b), &rec); err != nil {
			return nil, "", fmt.Errorf("token: bad record %s: %w", ids[i], err)
		}
		if rec.Namespace == ns {
			out = append(out, rec.Token)
		}
	}
	return out, next, nil
}

// indexPage reads at most limit members of ns's index after the member after, and the member to
// read the next page after ("" at the end).
func (s *TokenStore) indexPage(ctx context.Context, ns, after string, limit int) ([]string, string, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	members, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.keys.tokenIndex(ns), Start: start, Stop: "+", ByLex: true, Count: int64(limit) + 1,
	}).Result()
	if err != nil {
		return nil, "", fmt.Errorf("token: list: %w", err)
	}
	if len(members) <= limit {
		return members, "", nil
	}
	return members[:limit], members[limit-1], nil
}

// listNamespace reads every token of ns, a page at a time.
func (s *TokenStore) listNamespace(ctx context.Context, ns string) ([]Token, error) {
	out := []Token{}
	after := ""
	for {
		page, next, err := s.Page(ctx, ns, after, MaxPage)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// Count returns how many tokens namespace ns holds (one ZCARD).
func (s *TokenStore) Count(ctx context.Context, ns string) (int64, error) {
	n, err := s.rdb.ZCard(ctx, s.keys.tokenIndex(ns)).Result()
	if err != nil {
		return 0, fmt.Errorf("token: count: %w", err)
	}
	return n, nil
}

// indexBatch is how many token records one step of IndexTokens reads.
const indexBatch = 500

// IndexTokens adds every stored token to its namespace's index: the migration of tokens written
// before the indexes existed. It reads the token hash a batch at a time (HSCAN) and adds each
// batch with one pipelined ZADD a token, so no call blocks Redis, and running it again (every
// server start does) changes nothing. It returns how many tokens it saw.
func (s *TokenStore) IndexTokens(ctx context.Context) (int, error) {
	var cursor uint64
	seen := 0
	for {
		kv, next, err := s.rdb.HScan(ctx, s.key, cursor, "", indexBatch).Result()
		if err != nil {
			return seen, fmt.Errorf("token: index: %w", err)
		}
		pipe := s.rdb.Pipeline()
		for i := 0; i+1 < len(kv); i += 2 {
			var rec tokenRecord
			if err := json.Unmarshal([]byte(kv[i+1]), &rec); err != nil || rec.ID != kv[i] || !ValidName(rec.Namespace) {
				continue // not a record this version wrote: leave it to whoever did
			}
			pipe.ZAddNX(ctx, s.keys.tokenIndex(rec.Namespace), redis.Z{Member: tokenIndexMember(rec.Token)})
			seen++
		}
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				return seen, fmt.Errorf("token: index: %w", err)
			}
		}
		if next == 0 {
			return seen, nil
		}
		cursor = next
	}
}
