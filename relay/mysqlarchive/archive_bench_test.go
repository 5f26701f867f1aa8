package mysqlarchive_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/relay/mysqlarchive"
)

// BenchmarkPut measures archived tasks per second, written 100 per call with a 512-byte result.
func BenchmarkPut(b *testing.B) {
	a, err := mysqlarchive.Open(b.Context(), mysqltest.New(b), mysqlarchive.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	body := bytes.Repeat([]byte("r"), 512)
	recs := make([]relay.ArchiveRecord, 100)
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
