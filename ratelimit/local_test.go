package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

func TestLocalLimiter(t *testing.T) {
	t.Parallel()
	l := newLocalLimiter(Limit{Rate: 2, Period: time.Hour, Burst: 3}, 100)
	for i, want := range []bool{true, true, true, false} {
		if got := l.allowN("k", 1); got.Allowed != want || got.Limit != 3 {
			t.Fatalf("call %d: %+v, want allowed=%v", i, got, want)
		}
	}
	if res := l.allowN("k", 1); res.RetryAfter <= 29*time.Minute || res.RetryAfter > 30*time.Minute {
		t.Fatalf("RetryAfter = %s, want about 30m (one event at 2 an hour)", res.RetryAfter)
	}
	l.refund("k", 2)
	if res := l.allowN("k", 2); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("after refund: %+v", res)
	}
	l.reset("k")
	if res := l.allowN("k", 3); !res.Allowed {
		t.Fatalf("after reset: %+v", res)
	}
}

func TestLocalLimiterBoundsKeys(t *testing.T) {
	t.Parallel()
	l := newLocalLimiter(Limit{Rate: 1, Period: time.Hour, Burst: 1}, 10)
	for i := range 100 {
		l.allowN(strconv.Itoa(i), 1)
		if n := len(l.tat); n > 10 {
			t.Fatalf("after %d keys the local limiter tracks %d, want at most 10", i+1, n)
		}
	}
}
