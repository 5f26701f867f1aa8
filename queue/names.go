package queue

import "strings"

// nameRule is the rule for namespace, queue and prefix names (lmstfy's, so its clients fit).
const nameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes"

func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_'
	}) < 0
}
