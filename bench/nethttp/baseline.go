// Package nethttp measures `sluice server` side by side with the floor of any job API written in
// Go: a minimal net/http server whose every request is one Redis command through go-redis. Both
// servers run as processes of their own on one Redis and are driven, in turns, by the load
// generator of `sluice bench`; the benchmark reports jobs per second and the CPU each process
// (server, Redis, load generator) spends per job.
//
//	cd bench && go test -run '^$' -bench SideBySide -benchtime 50000x ./nethttp/
//
// The baseline speaks just enough of the native API for the load generator's publish and
// consume+ack scenarios. It keeps no job record, lease, retry or metric: it shows what an HTTP
// request with one Redis call costs on the machine, which is the most a job server can approach.
package nethttp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Baseline is the minimal server's handler. Its routes, each one Redis command:
//
//	POST /v1/ns/{ns}/queues/{q}/jobs            LPUSH of the body (of each job of a {"jobs": [...]} body)
//	POST /v1/ns/{ns}/consume                    RPOP of count jobs of the first queue named
//	POST /v1/ns/{ns}/queues/{q}/jobs/{id}/ack   DEL of the job's lease key (there is none; the call is the cost)
//
// Keys start with prefix. A stored job is its id, a space and its JSON body.
func Baseline(rdb redis.UniversalClient, prefix string) http.Handler {
	b := &baseline{rdb: rdb, prefix: prefix}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/ns/{ns}/queues/{q}/jobs", b.publish)
	mux.HandleFunc("POST /v1/ns/{ns}/consume", b.consume)
	mux.HandleFunc("POST /v1/ns/{ns}/queues/{q}/jobs/{id}/ack", b.ack)
	return mux
}

type baseline struct {
	rdb    redis.UniversalClient
	prefix string
	seq    atomic.Uint64
}

func (b *baseline) key(ns, q string) string { return b.prefix + ":{" + ns + "/" + q + "}:jobs" }

func (b *baseline) publish(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var bulk struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	jobs := []json.RawMessage{body}
	if bytes.HasPrefix(body, []byte(`{"jobs":`)) && json.Unmarshal(body, &bulk) == nil {
		jobs = bulk.Jobs // the load generator's untimed filling of a queue
	}
	if len(jobs) == 0 {
		http.Error(w, "no jobs", http.StatusBadRequest)
		return
	}
	values := make([]any, len(jobs))
	id := ""
	for i, job := range jobs {
		id = strconv.FormatUint(b.seq.Add(1), 10)
		values[i] = id + " " + string(job)
	}
	if err := b.rdb.LPush(r.Context(), b.key(r.PathValue("ns"), r.PathValue("q")), values...).Err(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"job_id":%q}`, id)
}

func (b *baseline) consume(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Queues []string `json:"queues"`
		Count  int      `json:"count"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Queues) == 0 {
		http.Error(w, "want {\"queues\": [...], \"count\": n}", http.StatusBadRequest)
		return
	}
	q := req.Queues[0]
	jobs, err := b.rdb.RPopCount(r.Context(), b.key(r.PathValue("ns"), q), max(req.Count, 1)).Result()
	if err != nil && err != redis.Nil { //nolint:errorlint // go-redis returns redis.Nil itself
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	out := append(make([]byte, 0, 256), `{"jobs":[`...)
	for i, job := range jobs {
		id, data := job, "null"
		for k := range len(job) {
			if job[k] == ' ' {
				id, data = job[:k], job[k+1:]
				break
			}
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"job_id":`...)
		out = strconv.AppendQuote(out, id)
		out = append(out, `,"queue":`...)
		out = strconv.AppendQuote(out, q)
		out = append(out, `,"delivery":1,"payload":`...)
		out = append(out, data...)
		out = append(out, '}')
	}
	out = append(out, "]}"...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out) //nolint:gosec // JSON answer of the jobs the clients sent, never rendered as a page
}

func (b *baseline) ack(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	lease := b.prefix + ":{" + r.PathValue("ns") + "/" + r.PathValue("q") + "}:lease:" + r.PathValue("id")
	if err := b.rdb.Del(r.Context(), lease).Err(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
