package cache

import (
	"fmt"
	"strconv"
	"strings"
)

// keyspace builds every Redis key and channel name of a Store, in one place:
//
//	<prefix>:cache:{<key>}      the record (a string)
//	<prefix>:cache:{<key>}:n    the channel a write-back, delete or unlock is published on
//
// The braces make the cache key the hash tag, so a key's record and channel share a slot.
type keyspace struct {
	base    string // "<prefix>:cache:"
	pattern string // the PSUBSCRIBE pattern matching every channel of the Store
}

func newKeyspace(prefix string) keyspace {
	base := prefix + ":cache:"
	return keyspace{base: base, pattern: globEscape(base) + "{*}:n"}
}

func (ks keyspace) record(key string) string  { return ks.base + "{" + key + "}" }
func (ks keyspace) channel(key string) string { return ks.base + "{" + key + "}:n" }

// globEscape escapes the glob characters of a PSUBSCRIBE pattern.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// keyString turns a cache key into the string used in Redis names.
func keyString[K comparable](k K) string {
	switch v := any(k).(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case int32:
		return strconv.FormatInt(int64(v), 10)
	case uint64:
		return strconv.FormatUint(v, 10)
	case uint32:
		return strconv.FormatUint(uint64(v), 10)
	case uint:
		return strconv.FormatUint(uint64(v), 10)
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}
