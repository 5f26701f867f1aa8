package callback

import (
	"context"
	"time"
)

// EndpointSlots is what the Deliverer needs of the request queue (DelivererConfig.Relay) to make
// callbacks to a service share the limits of its endpoint with the endpoint's tasks: which
// endpoint covers a URL, and one of its slots (a concurrency slot with a token of its rate
// limit) for each call. *relay.Client satisfies it; the callback package does not import relay.
type EndpointSlots interface {
	// CoveringEndpoint names the endpoint whose target URL covers url (the longest one when
	// several do); ok is false when none does.
	CoveringEndpoint(ctx context.Context, url string) (endpoint string, ok bool, err error)
	// HoldSlot waits until one of endpoint's slots is free and takes it for holder (a callback
	// job's delivery), or fails when ctx ends first. The slot frees itself hold after it was
	// taken; release gives it back sooner.
	HoldSlot(ctx context.Context, endpoint, holder string, hold time.Duration) (release func(context.Context) error, err error)
}
