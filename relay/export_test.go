package relay

import "github.com/sluicehq/sluice/internal/duework"

// MissEndpointChanges makes c a Client that endpoint changes are never pushed to (as one whose
// Pub/Sub connection was down when they were published): it learns of them only by its refresh
// interval or a read-through. Call it before c first reads the settings.
func MissEndpointChanges(c *Client) {
	c.changes.mu.Lock()
	c.changes.closed = true
	c.changes.mu.Unlock()
}

// DueKeyOf is the shard of the due index that holds the endpoint's entry.
func DueKeyOf(c *Client, endpoint string) string { return c.keys.get(endpoint).due() }

// DueSlotsKey is the set of the hash slots in use of the endpoints' due index (on a Cluster).
func DueSlotsKey(c *Client) string { return duework.SlotsKey(dueBase(c.cfg.Prefix)) }
