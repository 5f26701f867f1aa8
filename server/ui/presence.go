package ui

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/startstop"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// The servers page shows the servers running now and the consumers connected to each, as
// asynqmon's Servers tab does. Each server keeps its consumers in memory (what its consume
// handler is serving, and who consumed within consumerGrace) and writes them with its heartbeat,
// one small script call every SampleInterval; a server that stops heartbeating is gone from the
// page after three intervals. Both sides are bounded: a server tracks at most maxTrackedConsumers
// and lists maxListedConsumers of them; the index keeps maxServers.
const (
	maxTrackedConsumers = 1000
	maxListedConsumers  = 100
	maxServers          = 200
	// consumerGrace keeps a worker that consumes in a loop listed between its consumes.
	consumerGrace = 30 * time.Second
)

// consumerKey is a consumer as the page names it: a token (or none) from an address, on a
// namespace's queues, through an API (APINative or APILmstfy).
type consumerKey struct{ ns, queues, who, api string }

// The APIs a consumer consumes through, as ConsumerInfo.API names them.
const (
	APINative = "native" // POST /v1/ns/{ns}/consume
	APILmstfy = "lmstfy" // the lmstfy-compatible GET /api/{ns}/{q}
)

type consumerState struct {
	since, last time.Time
	waiting     int // consumes being served now
}

// ServerInfo is one server's heartbeat: who it is and the consumers connected to it.
type ServerInfo struct {
	ID        string         `json:"id"`
	Host      string         `json:"host"`
	PID       int            `json:"pid"`
	Version   string         `json:"version"`
	Started   time.Time      `json:"started"`
	Beat      time.Time      `json:"beat"`
	Consumers []ConsumerInfo `json:"consumers"`
	// ConsumerCount counts every consumer, listed or not.
	ConsumerCount int `json:"consumer_count"`
}

// ConsumerInfo is a consumer connected to a server.
type ConsumerInfo struct {
	Namespace string    `json:"namespace"`
	Queues    string    `json:"queues"`
	Who       string    `json:"who"`
	Since     time.Time `json:"since"`
	Waiting   bool      `json:"waiting"` // blocked in a consume now
	// API is the routes it consumes through: APINative, or APILmstfy ("" in a heartbeat from a
	// server that did not say: native).
	API string `json:"api,omitempty"`
}

// Presence is the server's heartbeat and its consumers: a background service the server starts
// with its others, and Watch for its consume handler.
type Presence struct {
	startstop.Base
	cfg     Config
	scripts *redisx.ScriptRunner
	info    ServerInfo

	mu        sync.Mutex
	consumers map[consumerKey]*consumerState
	untracked int // consumes served now beyond maxTrackedConsumers
}

var _ startstop.Service = (*Presence)(nil)

func newPresence(cfg Config, scripts *redisx.ScriptRunner) *Presence {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return &Presence{cfg: cfg, scripts: scripts, consumers: map[consumerKey]*consumerState{}, info: ServerInfo{
		ID: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])), Host: host, PID: os.Getpid(),
		Version: cfg.Version, Started: time.Now().UTC(),
	}}
}

// Watch records a consume of namespace ns's queues through api (APINative, APILmstfy) by the
// request's token from its client address until done is called (the consume answered).
func (p *Presence) Watch(ctx context.Context, api, ns string, queues []string) (done func()) {
	who := "no token"
	if tok, ok := tenant.FromContext(ctx); ok {
		who = "token " + tok.ID
	}
	if st := httpapi.StateOf(ctx); st != nil && st.Client.IsValid() {
		who += " from " + st.Client.String()
	}
	k := consumerKey{ns: ns, queues: strings.Join(queues, ", "), who: who, api: api}
	now := time.Now().UTC()
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.consumers[k]
	if st == nil && len(p.consumers) >= maxTrackedConsumers {
		p.untracked++
		return func() { p.mu.Lock(); p.untracked--; p.mu.Unlock() }
	}
	if st == nil {
		st = &consumerState{since: now}
		p.consumers[k] = st
	}
	st.waiting++
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		st.waiting--
		st.last = time.Now()
	}
}

// snapshot is the server's heartbeat now: its consumers, the longest connected first, with
// those no longer connected forgotten.
func (p *Presence) snapshot(now time.Time) ServerInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := p.info
	info.Beat = now.UTC()
	for k, st := range p.consumers {
		if st.waiting == 0 && now.Sub(st.last) > consumerGrace {
			delete(p.consumers, k)
			continue
		}
		info.Consumers = append(info.Consumers, ConsumerInfo{Namespace: k.ns, Queues: k.queues, Who: k.who, Since: st.since, Waiting: st.waiting > 0, API: k.api})
	}
	info.ConsumerCount = len(info.Consumers) + p.untracked
	slices.SortFunc(info.Consumers, func(a, b ConsumerInfo) int {
		return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.Namespace+a.Queues+a.Who+a.API, b.Namespace+b.Queues+b.Who+b.API))
	})
	if len(info.Consumers) > maxListedConsumers {
		info.Consumers = info.Consumers[:maxListedConsumers]
	}
	return info
}

// ttl is how long a heartbeat lasts: three intervals, so one late beat does not hide a server.
func (p *Presence) ttl() time.Duration { return 3 * p.cfg.SampleInterval }

// Start heartbeats at once and every SampleInterval until Stop or ctx ends; then the server
// leaves the index.
func (p *Presence) Start(ctx context.Context) error {
	return p.Run(ctx, func(ctx context.Context) {
		startstop.Every(ctx, p.cfg.SampleInterval, func(ctx context.Context) {
			if err := p.Beat(ctx); err != nil && ctx.Err() == nil {
				p.cfg.Logger.Warn("dashboard heartbeat failed", "error", err)
			}
		})
		leave, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := p.send(leave, ""); err != nil {
			p.cfg.Logger.Warn("dashboard heartbeat: leaving the list of servers failed", "error", err)
		}
	})
}

// Beat writes the server's heartbeat.
func (p *Presence) Beat(ctx context.Context) error {
	b, err := json.Marshal(p.snapshot(time.Now()))
	if err != nil {
		return err
	}
	return p.send(ctx, string(b))
}

func (p *Presence) send(ctx context.Context, value string) error {
	err := p.scripts.Run(ctx, "presence", []string{serversKey(p.cfg.Prefix), serverKey(p.cfg.Prefix, p.info.ID)},
		p.info.ID, value, p.ttl().Milliseconds(), maxServers).Err()
	if err != nil {
		return fmt.Errorf("ui: heartbeat: %w", err)
	}
	return nil
}

// servers reads the servers whose heartbeat has not expired, the longest running first.
func (u *UI) servers(ctx context.Context) ([]ServerInfo, error) {
	ids, err := u.cfg.Redis.ZRange(ctx, serversKey(u.cfg.Prefix), 0, maxServers-1).Result()
	if err != nil {
		return nil, fmt.Errorf("ui: servers: %w", err)
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = serverKey(u.cfg.Prefix, id)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	vals, err := u.cfg.Redis.MGet(ctx, keys...).Result() // one hash tag: one slot in a Cluster
	if err != nil {
		return nil, fmt.Errorf("ui: servers: %w", err)
	}
	var out []ServerInfo
	for _, v := range vals {
		var s ServerInfo
		if str, ok := v.(string); ok && json.Unmarshal([]byte(str), &s) == nil {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b ServerInfo) int { return cmp.Or(a.Started.Compare(b.Started), strings.Compare(a.ID, b.ID)) })
	return out, nil
}
