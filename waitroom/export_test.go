package waitroom

import (
	"net/http"
	"net/url"

	"github.com/sluicehq/sluice/internal/duework"
)

// NewLeanProxy is the room proxy's upstream client with no room in front, for the benchmarks.
func NewLeanProxy(target *url.URL) http.Handler {
	return newUpstreamProxy(target, upstreamProxyConfig{Fail: func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusBadGateway)
	}})
}

// DueKeyOf is the shard of the due index that holds the room's entry.
func DueKeyOf(c *Client, room string) string {
	r, err := c.Room(room)
	if err != nil {
		panic(err)
	}
	return r.keys.due()
}

// DueSlotsKey is the set of the hash slots in use of the rooms' due index (on a Cluster).
func DueSlotsKey(c *Client) string { return duework.SlotsKey(dueBase(c.cfg.Prefix)) }

// MaintainerRefreshes is how many settings refreshes the Maintainer has done.
func MaintainerRefreshes(m *Maintainer) int64 { return m.refreshes.Load() }
