package server

import (
	"net/http"
	"testing"
	"time"
)

// With replica_acks and no replica to acknowledge, a publish answers 503 not_replicated (the job
// is on the primary), never 201 nor a 500.
func TestPublishWaitsForReplicas(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.ReplicaAcks = 1
		c.ReplicaAckTimeout = 10 * time.Millisecond
	})
	tok := ts.token(t, "ns")
	r := ts.public(t, http.MethodPost, "/v1/ns/ns/queues/q/jobs", tok, map[string]any{"payload": "x"})
	if r.Status != http.StatusServiceUnavailable || r.ErrorCode() != "not_replicated" {
		t.Fatalf("publish = %d %s, want 503 not_replicated", r.Status, r.Body)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After on not_replicated")
	}
}

func TestReplicaSettingsValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{ReplicaAcks: -1}, {ReplicaAckTimeout: -time.Second}} {
		if err := c.withDefaults().validate(); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}
