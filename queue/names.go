package queue

import "github.com/sluicehq/sluice/internal/names"

// nameRule is the rule for namespace, queue and prefix names (lmstfy's, so its clients fit).
const nameRule = "must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes"

func validName(s string) bool { return names.Valid(s, 255) }
