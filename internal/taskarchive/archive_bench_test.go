package taskarchive_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/taskarchive"
	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
)

// BenchmarkPut measures archived tasks per second, written 100 per call with a 512-byte result.
func BenchmarkPut(b *testing.B) {
	a, err := taskarchive.Open(b.Context(), mysqltest.New(b), taskarchive.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	body := bytes.Repeat([]byte("r"), 512)
	recs := make([]taskarchive.Record, 100)
	n := 0
	for b.Loop() {
		for i := range recs {
			recs[i] = full(fmt.Sprintf("task-%09d", n))
			recs[i].Result = body
			n++
		}
		if err := a.Put(b.Context(), recs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tasks/s")
}
