package relay

import (
	"strings"

	"github.com/sluicehq/sluice/internal/ids"
)

// idGen makes task ids "<endpoint>.<26 characters>": the endpoint, so that the task's keys (which
// carry the endpoint's hash tag) are found from the id alone, then an id that sorts by creation
// time (internal/ids).
type idGen struct{ g ids.Gen }

func (g *idGen) next(endpoint string) string { return endpoint + "." + g.g.Next() }

// splitID returns the endpoint of a task id, or false when id is not one.
func splitID(id string) (endpoint string, ok bool) {
	i := strings.LastIndexByte(id, '.')
	if i <= 0 || !ids.Valid(id[i+1:]) {
		return "", false
	}
	endpoint = id[:i]
	if !validName(endpoint) {
		return "", false
	}
	return endpoint, true
}
