// Package names holds the one character rule for the names the systems put into Redis keys, URLs
// and cookie names (namespaces, queues, endpoints, rooms, key prefixes): ASCII letters, digits,
// '-' and '_', nothing that needs escaping and no '{' or '}' to break a Redis Cluster hash tag.
// Each system picks its own length limit and keeps its own rule text, which its errors quote.
package names

import "strings"

// Valid reports whether s is 1 to max bytes of [-_A-Za-z0-9].
func Valid(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_'
	}) < 0
}
