package ratelimit

import (
	"sync"
	"time"
)

// localLimiter is the in-process GCRA that decides while Redis is down (FailLocal). It uses the
// same integer arithmetic as lua/gcra.lua: time in microseconds, debt in units of 1/rate µs.
type localLimiter struct {
	rate, period, burst int64
	maxKeys             int

	mu  sync.Mutex
	tat map[string]tat
}

// tat is a theoretical arrival time: us + rem/rate microseconds since the Unix epoch.
type tat struct{ us, rem int64 }

func newLocalLimiter(l Limit, maxKeys int) *localLimiter {
	return &localLimiter{
		rate:    int64(l.Rate),
		period:  l.Period.Microseconds(),
		burst:   int64(l.Burst),
		maxKeys: maxKeys,
		tat:     make(map[string]tat),
	}
}

// debt is how far key's tat is ahead of now, in units of 1/rate µs; 0 for a full bucket.
func (l *localLimiter) debt(key string, now int64) int64 {
	t, ok := l.tat[key]
	if !ok {
		return 0
	}
	return max((t.us-now)*l.rate+t.rem, 0)
}

func (l *localLimiter) store(key string, now, debt int64) {
	if debt == 0 {
		delete(l.tat, key)
		return
	}
	if _, ok := l.tat[key]; !ok && len(l.tat) >= l.maxKeys {
		l.evict(now)
	}
	l.tat[key] = tat{us: now + debt/l.rate, rem: debt % l.rate}
}

// evict drops keys whose bucket is full again and, if that is not enough, any others.
func (l *localLimiter) evict(now int64) {
	for k := range l.tat {
		if l.debt(k, now) == 0 {
			delete(l.tat, k)
		}
	}
	for k := range l.tat {
		if len(l.tat) < l.maxKeys {
			break
		}
		delete(l.tat, k)
	}
}

func (l *localLimiter) allowN(key string, n int) Result {
	now := time.Now().UnixMicro()
	l.mu.Lock()
	defer l.mu.Unlock()
	debt := l.debt(key, now)
	tolerance := l.burst * l.period
	next := debt + int64(n)*l.period
	res := Result{Allowed: true, Limit: int(l.burst)}
	if next > tolerance {
		res.Allowed = false
		res.RetryAfter = time.Duration(ceilDiv(next-tolerance, l.rate)) * time.Microsecond
		next = debt
	} else {
		l.store(key, now, next)
	}
	res.Remaining = int((tolerance - next) / l.period)
	res.ResetAfter = time.Duration(ceilDiv(next, l.rate)) * time.Microsecond
	return res
}

func (l *localLimiter) refund(key string, n int) {
	now := time.Now().UnixMicro()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.store(key, now, max(l.debt(key, now)-int64(n)*l.period, 0))
}

func (l *localLimiter) reset(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.tat, key)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
