package relay

import "context"

// Peek returns a task like Get, but reading it does not count as the caller's read of its final
// status (its stay in Redis is not shortened): for servers that check who owns a task before
// they answer or change it.
func (c *Client) Peek(ctx context.Context, id string) (Task, error) {
	return c.get(ctx, id, false)
}
