package loadgen

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestLeasesOf: the load generator reads a consume answer without reflection exactly as
// encoding/json does, and leaves what it cannot read plainly to encoding/json.
func TestLeasesOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		fast bool
	}{
		{`{"jobs":[]}`, true},
		{`{"jobs":[{"job_id":"01A","queue":"q","payload":{"a":[1,"x\"]"]},"delivery":1,"remaining_tries":0,` +
			`"priority":0,"attributes":{},"published_at":"2026-11-21T18:00:00Z","elapsed_ms":3,` +
			`"lease_until":"2026-11-21T18:05:00Z"},{"job_id":"01B","queue":"q","payload_base64":"eA==","delivery":2}]}` + "\n", true},
		{`{"jobs":[{"job_id":"01\u0041","queue":"q","delivery":1}]}`, false},
		{`{"jobs":[{"job_id":"01A","queue":"q"}]}`, false},
		{`{"jobs":[{"job_id":"01A","queue":"q","delivery":1.5}]}`, false},
	} {
		got, ok := leasesOf([]byte(c.body), []lease{{id: "before"}})
		if ok != c.fast {
			t.Fatalf("%s: fast path %v, want %v", c.body, ok, c.fast)
		}
		if !ok {
			if len(got) != 1 {
				t.Fatalf("%s: fallback changed the leases: %+v", c.body, got)
			}
			continue
		}
		var resp struct {
			Jobs []struct {
				JobID    string `json:"job_id"`
				Queue    string `json:"queue"`
				Delivery int    `json:"delivery"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(c.body), &resp); err != nil {
			t.Fatal(err)
		}
		want := []lease{{id: "before"}}
		for _, j := range resp.Jobs {
			want = append(want, lease{queue: j.Queue, id: j.JobID, delivery: j.Delivery})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %+v, want %+v", c.body, got, want)
		}
	}
}

func TestLmstfyLeasesOf(t *testing.T) {
	t.Parallel()
	one := `{"msg":"new job","namespace":"ns","queue":"q2","job_id":"01A","data":"eA==","ttl":600,"elapsed_ms":1,` +
		`"remain_tries":0,"attributes":null}`
	got, ok := lmstfyLeasesOf([]byte(one), "q", true, nil)
	if !ok || !reflect.DeepEqual(got, []lease{{queue: "q2", id: "01A"}}) {
		t.Fatalf("one job: %v %+v", ok, got)
	}
	got, ok = lmstfyLeasesOf([]byte("["+one+`,{"job_id":"01B","queue":""}]`), "q", false, nil)
	if !ok || !reflect.DeepEqual(got, []lease{{queue: "q2", id: "01A"}, {queue: "q", id: "01B"}}) {
		t.Fatalf("two jobs: %v %+v", ok, got)
	}
	if got, ok := lmstfyLeasesOf([]byte(`{"job_id":"\u0041"}`), "q", true, []lease{{id: "x"}}); ok || len(got) != 1 {
		t.Fatalf("escaped id took the fast path: %v %+v", ok, got)
	}
}
