package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluicehq/sluice/server/jobs"
	"github.com/sluicehq/sluice/server/tenant"

	"github.com/sluicehq/sluice/queue"
)

const qpath = "/v1/ns/shop/queues/emails"

func TestPublishConsumeAck(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{
		"payload": map[string]any{"to": "ada"}, "priority": 3, "tries": 2, "ttr": 1.5,
		"attributes": map[string]string{"lang": "en"},
	})
	wantStatus(t, r, http.StatusCreated, "")
	var pub struct {
		JobID     string `json:"job_id"`
		Duplicate bool   `json:"duplicate"`
	}
	r.JSON(t, &pub)
	if pub.JobID == "" || pub.Duplicate {
		t.Fatalf("publish = %s", r.Body)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Fatal("no request id")
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}})
	wantStatus(t, r, http.StatusOK, "")
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("consume = %s", r.Body)
	}
	d := got.Jobs[0]
	if d.JobID != pub.JobID || d.Queue != "emails" || string(d.Payload) != `{"to":"ada"}` || d.PayloadBase64 != nil ||
		d.Delivery != 1 || d.RemainingTries != 1 || d.Priority != 3 || d.Attributes["lang"] != "en" || d.PublishedAt.IsZero() {
		t.Fatalf("delivery = %s", r.Body)
	}
	if lease := time.Until(d.LeaseUntil); lease <= 0 || lease > 2*time.Second {
		t.Fatalf("lease_until %v is not about 1.5s ahead", d.LeaseUntil)
	}
	r = ts.public(t, http.MethodPost, qpath+"/jobs/"+pub.JobID+"/touch", tok, map[string]any{"delivery": 1, "ttr": 30})
	wantStatus(t, r, http.StatusOK, "")
	r = ts.public(t, http.MethodGet, qpath+"/jobs/"+pub.JobID, tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	var job jobs.JobJSON
	r.JSON(t, &job)
	if job.State != "leased" || job.LeaseUntil == nil || time.Until(*job.LeaseUntil) < 20*time.Second {
		t.Fatalf("job after touch = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, qpath+"/jobs/"+pub.JobID+"/ack", tok, map[string]any{"delivery": 2})
	wantStatus(t, r, http.StatusConflict, "lease_lost")
	r = ts.public(t, http.MethodPost, qpath+"/jobs/"+pub.JobID+"/ack", tok, map[string]any{"delivery": 1, "result": map[string]int{"sent": 1}})
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.public(t, http.MethodGet, qpath+"/jobs/"+pub.JobID, tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	job = jobs.JobJSON{}
	r.JSON(t, &job)
	if job.State != "done" || string(job.Result) != `{"sent":1}` {
		t.Fatalf("job after ack = %s", r.Body)
	}
	// A done job keeps its result, not its payload: no payload field at all.
	if job.Payload != nil || job.PayloadBase64 != nil {
		t.Fatalf("done job shows a payload: %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, qpath+"/jobs/"+pub.JobID+"/ack", tok, map[string]any{"delivery": 1})
	if r.Status != http.StatusConflict && r.Status != http.StatusNotFound {
		t.Fatalf("second ack: %d %s", r.Status, r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}})
	wantStatus(t, r, http.StatusOK, "")
	if strings.TrimSpace(string(r.Body)) != `{"jobs":[]}` {
		t.Fatalf("empty consume = %s", r.Body)
	}
}

func TestPublishBatchBase64AndDedup(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	raw := []byte{0, 1, 2, 255}
	r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"jobs": []map[string]any{
		{"payload_base64": base64.StdEncoding.EncodeToString(raw), "priority": 9},
		{"payload_base64": base64.StdEncoding.EncodeToString([]byte("123"))}, // valid JSON bytes, published as bytes
		{"payload": "text", "unique_key": "k1"},
		{"payload": "again", "unique_key": "k1"},
	}})
	wantStatus(t, r, http.StatusCreated, "")
	var pub struct {
		Jobs []jobs.PublishResult `json:"jobs"`
	}
	r.JSON(t, &pub)
	if len(pub.Jobs) != 4 || !pub.Jobs[3].Duplicate || pub.Jobs[3].JobID != pub.Jobs[2].JobID {
		t.Fatalf("batch = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "count": 10})
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	if len(got.Jobs) != 3 {
		t.Fatalf("consume = %s", r.Body)
	}
	if got.Jobs[0].PayloadBase64 == nil || *got.Jobs[0].PayloadBase64 != base64.StdEncoding.EncodeToString(raw) {
		t.Fatalf("bytes payload = %s", r.Body)
	}
	if got.Jobs[1].PayloadBase64 == nil || *got.Jobs[1].PayloadBase64 != "MTIz" || got.Jobs[1].Payload != nil {
		t.Fatalf("base64 JSON-looking payload = %s", r.Body)
	}
	if string(got.Jobs[2].Payload) != `"text"` || len(got.Jobs[2].Attributes) != 0 {
		t.Fatalf("string payload = %s", r.Body)
	}
}

func TestPriorityCap(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	prio := 2
	secret, _, err := ts.Tokens.Create(ctxT(t), tenant.CreateTokenParams{Namespace: "shop", MaxPriority: &prio})
	if err != nil {
		t.Fatal(err)
	}
	r := ts.public(t, http.MethodPost, qpath+"/jobs", secret, map[string]any{"payload": 1, "priority": 200})
	wantStatus(t, r, http.StatusCreated, "")
	var pub jobs.PublishResult
	r.JSON(t, &pub)
	r = ts.public(t, http.MethodGet, qpath+"/jobs/"+pub.JobID, secret, nil)
	var job jobs.JobJSON
	r.JSON(t, &job)
	if job.Priority != 2 || job.State != "ready" || job.Position == nil || *job.Position != 0 {
		t.Fatalf("capped job = %s", r.Body)
	}
}

func TestNackDeadRespawnDelete(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	var ids []string
	for range 3 {
		r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": "x", "tries": 1})
		var pub jobs.PublishResult
		r.JSON(t, &pub)
		ids = append(ids, pub.JobID)
	}
	r := ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "count": 3})
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	for _, d := range got.Jobs {
		r := ts.public(t, http.MethodPost, qpath+"/jobs/"+d.JobID+"/nack", tok, map[string]any{"delivery": d.Delivery, "error": "boom"})
		wantStatus(t, r, http.StatusOK, "")
		if !strings.Contains(string(r.Body), `"dead"`) {
			t.Fatalf("nack = %s", r.Body)
		}
	}
	r = ts.public(t, http.MethodGet, qpath+"/dead?limit=2", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	var dead struct {
		Jobs       []jobs.JobJSON `json:"jobs"`
		NextCursor string         `json:"next_cursor"`
		Total      int            `json:"total"`
	}
	r.JSON(t, &dead)
	if len(dead.Jobs) != 2 || dead.Total != 3 || dead.NextCursor == "" || dead.Jobs[0].LastError != "boom" {
		t.Fatalf("dead page = %s", r.Body)
	}
	r = ts.public(t, http.MethodGet, qpath+"/dead?limit=2&cursor="+dead.NextCursor, tok, nil)
	r.JSON(t, &dead)
	if len(dead.Jobs) != 1 || dead.NextCursor != "" {
		t.Fatalf("dead page 2 = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, qpath+"/dead/respawn", tok, map[string]any{"ids": []string{ids[0]}})
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), ids[0]) {
		t.Fatalf("respawn = %s", r.Body)
	}
	r = ts.public(t, http.MethodDelete, qpath+"/dead", tok, map[string]any{"limit": 10})
	wantStatus(t, r, http.StatusOK, "")
	if strings.TrimSpace(string(r.Body)) != `{"deleted":2}` {
		t.Fatalf("dead delete = %s", r.Body)
	}
	r = ts.public(t, http.MethodDelete, qpath+"/jobs/"+ids[0], tok, nil)
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.public(t, http.MethodDelete, qpath+"/jobs/"+ids[0], tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	r = ts.public(t, http.MethodGet, qpath+"/jobs/"+ids[0], tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
}

func TestQueuesPauseResumeDelete(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	for _, q := range []string{"a", "b"} {
		r := ts.public(t, http.MethodPost, "/v1/ns/shop/queues/"+q+"/jobs", tok, map[string]any{"payload": 1, "delay": 60})
		wantStatus(t, r, http.StatusCreated, "")
	}
	ts.public(t, http.MethodPost, "/v1/ns/shop/queues/a/jobs", tok, map[string]any{"payload": 1})
	r := ts.public(t, http.MethodGet, "/v1/ns/shop/queues", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	var list struct {
		Queues []jobs.QueueJSON `json:"queues"`
	}
	r.JSON(t, &list)
	if len(list.Queues) != 2 || list.Queues[0].Name != "a" || list.Queues[0].Ready != 1 || list.Queues[0].Delayed != 1 || list.Queues[1].Published != 1 {
		t.Fatalf("queues = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/queues/a/pause", tok, nil)
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/queues/a", tok, nil)
	var one jobs.QueueJSON
	r.JSON(t, &one)
	if !one.Paused || one.Ready != 1 {
		t.Fatalf("paused queue = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"a"}})
	if strings.TrimSpace(string(r.Body)) != `{"jobs":[]}` {
		t.Fatalf("consume of a paused queue = %s", r.Body)
	}
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/queues/a/resume", tok, nil)
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"a"}})
	if !strings.Contains(string(r.Body), "job_id") {
		t.Fatalf("consume after resume = %s", r.Body)
	}
	r = ts.public(t, http.MethodDelete, "/v1/ns/shop/queues/b", tok, nil)
	wantStatus(t, r, http.StatusOK, "")
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/queues/b", tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	r = ts.public(t, http.MethodDelete, "/v1/ns/shop/queues/b", tok, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
}

func TestBlockedConsumeWokenByPublish(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	done := make(chan response, 1)
	go func() {
		done <- ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "timeout": 30})
	}()
	// Publish until the blocked consume has taken a job (it may not be waiting yet at first).
	var r response
	deadline := time.Now().Add(20 * time.Second)
	for r.Status == 0 {
		ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": "wake"})
		select {
		case r = <-done:
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("blocked consume was not woken")
			}
		}
	}
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), `"wake"`) {
		t.Fatalf("woken consume = %s", r.Body)
	}
}

// A job may carry 32 attributes (docs/server.md) also when its payload comes as payload_base64,
// for which the server keeps an attribute of its own; when that one cannot fit, the error says why.
func TestBase64PayloadWithMostAttributes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	attrs := map[string]string{}
	for i := range queue.MaxAttributes {
		attrs[fmt.Sprintf("k%d", i)] = "v"
	}
	r := ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{
		"payload_base64": base64.StdEncoding.EncodeToString([]byte{0, 255}), "attributes": attrs})
	wantStatus(t, r, http.StatusCreated, "")
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}})
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	if len(got.Jobs) != 1 || got.Jobs[0].PayloadBase64 == nil || *got.Jobs[0].PayloadBase64 != "AP8=" ||
		len(got.Jobs[0].Attributes) != queue.MaxAttributes {
		t.Fatalf("consume = %s", r.Body)
	}
	// Bytes that look like JSON need the server's attribute to come back as bytes.
	r = ts.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload_base64": "MTIz", "attributes": attrs})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "attributes" || !strings.Contains(r.ErrorCode()+string(r.Body), "payload_base64") {
		t.Fatalf("32 attributes with JSON-looking payload_base64: %s", r.Body)
	}
}

// JSON text is UTF-8: stored bytes that parse as JSON but carry invalid UTF-8 (published through
// lmstfy's routes, or inside a native JSON body) come back as base64, so every response is JSON.
func TestInvalidUTF8PayloadComesBackAsBase64(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	raw := []byte("\"\xff\"")
	r := lmstfyDo(t, http.MethodPut, ts.PublicURL+"/api/shop/emails", raw, "X-Token", tok)
	wantStatus(t, r, http.StatusCreated, "")
	r = ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}})
	if !utf8.Valid(r.Body) {
		t.Fatalf("consume answered invalid UTF-8: %q", r.Body)
	}
	var got struct {
		Jobs []jobs.DeliveryJSON `json:"jobs"`
	}
	r.JSON(t, &got)
	want := base64.StdEncoding.EncodeToString(raw)
	if len(got.Jobs) != 1 || got.Jobs[0].PayloadBase64 == nil || *got.Jobs[0].PayloadBase64 != want {
		t.Fatalf("consume = %s", r.Body)
	}
	job := qpath + "/jobs/" + got.Jobs[0].JobID
	r = ts.public(t, http.MethodGet, job, tok, nil)
	var j jobs.JobJSON
	r.JSON(t, &j)
	if !utf8.Valid(r.Body) || j.PayloadBase64 == nil || *j.PayloadBase64 != want {
		t.Fatalf("GET job = %q", r.Body)
	}
	r = ts.public(t, http.MethodPost, job+"/ack", tok, []byte("{\"delivery\": 1, \"result\": \"\xff\"}"))
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.public(t, http.MethodGet, job, tok, nil)
	r.JSON(t, &j)
	if !utf8.Valid(r.Body) || j.ResultBase64 == nil || *j.ResultBase64 != want {
		t.Fatalf("GET acked job = %q", r.Body)
	}
}
