package queue

import "github.com/sluicehq/sluice/internal/ids"

// idGen makes job ids: 26 characters that sort by creation time (internal/ids).
type idGen struct{ g ids.Gen }

func (g *idGen) next() string { return g.g.Next() }
