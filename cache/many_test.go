package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestGetMany(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := newStore[int](t, env, Config{})
		if err := s.Set(ctx, "a", 1); err != nil {
			t.Fatal(err)
		}
		var batches [][]string
		var mu sync.Mutex
		load := func(_ context.Context, keys []string) (map[string]int, error) {
			mu.Lock()
			batches = append(batches, append([]string(nil), keys...))
			mu.Unlock()
			out := map[string]int{}
			for _, k := range keys {
				if k != "none" {
					out[k] = len(k) * 10
				}
			}
			return out, nil
		}
		keys := []string{"a", "bb", "ccc", "none", "dddd", "bb"}
		for round := range 2 {
			got, err := s.GetMany(ctx, keys, load)
			if err != nil {
				t.Fatalf("GetMany: %v", err)
			}
			want := map[string]int{"a": 1, "bb": 20, "ccc": 30, "dddd": 40}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("round %d: GetMany = %v, want %v", round, got, want)
			}
		}
		if len(batches) != 1 || len(batches[0]) != 4 {
			t.Fatalf("batch loader calls = %v, want one call with the 4 missing keys", batches)
		}
		if err := s.Delete(ctx, "a", "bb", "ccc"); err != nil {
			t.Fatalf("Delete many: %v", err)
		}
	})
}
