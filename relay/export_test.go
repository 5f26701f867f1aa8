package relay

// MissEndpointChanges makes c a Client that endpoint changes are never pushed to (as one whose
// Pub/Sub connection was down when they were published): it learns of them only by its refresh
// interval or a read-through. Call it before c first reads the settings.
func MissEndpointChanges(c *Client) {
	c.changes.mu.Lock()
	c.changes.closed = true
	c.changes.mu.Unlock()
}
