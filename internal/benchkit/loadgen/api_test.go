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

// nativeLeasesSlow is what nativeAPI.consume reads with encoding/json (its fallback).
func nativeLeasesSlow(body []byte) ([]lease, error) {
	var resp struct {
		Jobs []struct {
			JobID    string `json:"job_id"`
			Queue    string `json:"queue"`
			Delivery int    `json:"delivery"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, err
	}
	var out []lease
	for _, j := range resp.Jobs {
		out = append(out, lease{queue: j.Queue, id: j.JobID, delivery: j.Delivery})
	}
	return out, nil
}

// lmstfyLeasesSlow is what lmstfyAPI.consume reads with encoding/json (its fallback).
func lmstfyLeasesSlow(body []byte, q string, one bool) ([]lease, error) {
	var jobs []lmstfyJob
	var err error
	if one {
		var j lmstfyJob
		err = json.Unmarshal(body, &j)
		jobs = append(jobs, j)
	} else {
		err = json.Unmarshal(body, &jobs)
	}
	if err != nil {
		return nil, err
	}
	var out []lease
	for _, j := range jobs {
		out = append(out, lease{queue: cmpOr(j.Queue, q), id: j.JobID})
	}
	return out, nil
}

// TestLeasesOfAgreesWithEncodingJSON: whatever leasesOf accepts must read as encoding/json
// reads it (member names match case-insensitively there, a repeated member replaces the earlier
// one, and every value must be valid JSON).
func TestLeasesOfAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"JOBS":[{"job_id":"a","queue":"q","delivery":1}]}`,
		"{\"job\u017f\":[{\"job_id\":\"a\",\"queue\":\"q\",\"delivery\":1}]}", // ſ folds to s in encoding/json
		`{"jobs":[{"job_id":"a","JOB_ID":"b","queue":"q","delivery":1}]}`,
		`{"jobs":[{"job_id":"a","queue":"q","delivery":1,"Delivery":2}]}`,
		`{"jobs":[{"job_id":"a","queue":"q","delivery":1}],"jobs":[{"job_id":"b","queue":"q","delivery":1}]}`,
		`{"next":nope,"jobs":[{"job_id":"a","queue":"q","delivery":1}]}`,
		`{"jobs":[{"job_id":"a","queue":"q","delivery":1,"payload":[1:2]}]}`,
	} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			got, ok := leasesOf([]byte(body), nil)
			if !ok {
				return // encoding/json reads it
			}
			want, err := nativeLeasesSlow([]byte(body))
			if err != nil {
				t.Fatalf("fast path accepted %s (%+v); encoding/json refuses it: %v", body, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: fast path %+v, encoding/json %+v", body, got, want)
			}
		})
	}
}

// TestLmstfyLeasesOfAgreesWithEncodingJSON: the same for lmstfy consume answers.
func TestLmstfyLeasesOfAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		one  bool
	}{
		{`{"job_id":"a","queue":"q2","queue":""}`, true},
		{`{"job_id":"a","JOB_ID":"b"}`, true},
		{`{"job_id":"a","Queue":"q2"}`, true},
		{`{"job_id":"a","data":nope}`, true},
		{`[{"job_id":"a","queue":"q2","queue":""}]`, false},
	} {
		t.Run(c.body, func(t *testing.T) {
			t.Parallel()
			got, ok := lmstfyLeasesOf([]byte(c.body), "q", c.one, nil)
			if !ok {
				return
			}
			want, err := lmstfyLeasesSlow([]byte(c.body), "q", c.one)
			if err != nil {
				t.Fatalf("fast path accepted %s (%+v); encoding/json refuses it: %v", c.body, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: fast path %+v, encoding/json %+v", c.body, got, want)
			}
		})
	}
}
