package server

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/jaegertest"
	"github.com/sluicehq/sluice/server/tenant"
)

// A job consumed over HTTP (native and lmstfy routes) gets a CONSUMER "receive" span in the trace
// of the request that published it, the publish's child, linked to the span of the consume
// request, which has a trace of its own.
func TestTraceHTTPConsume(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := tracedServer(t, j)
	tok := ts.token(t, "shop", tenant.PermPublish, tenant.PermConsume)
	lm := lmstfyEnvOn(t, ts)
	for _, api := range []struct {
		name, q          string
		publish, consume func(traceparent string) response
		wantPublished    int
	}{
		{"native", "orders", func(tp string) response {
			return ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/queues/orders/jobs", tp, []byte(`{"payload":{"n":1}}`),
				"Authorization", "Bearer "+tok, "Content-Type", "application/json")
		}, func(tp string) response {
			return ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/consume", tp, []byte(`{"queues":["orders"]}`),
				"Authorization", "Bearer "+tok, "Content-Type", "application/json")
		}, http.StatusCreated},
		{"lmstfy", "mails", func(tp string) response {
			return ts.sendTraced(t, http.MethodPut, "/api/lmns/mails", tp, []byte(`{"n":1}`), "X-Token", lm.token)
		}, func(tp string) response {
			return ts.sendTraced(t, http.MethodGet, "/api/lmns/mails?timeout=0", tp, nil, "X-Token", lm.token)
		}, http.StatusCreated},
	} {
		t.Run(api.name, func(t *testing.T) {
			pubHeader, pubTrace, _ := newTraceparent()
			wantStatus(t, api.publish(pubHeader), api.wantPublished, "")
			conHeader, conTrace, conSpan := newTraceparent()
			wantStatus(t, api.consume(conHeader), http.StatusOK, "")

			calls := j.WaitTrace(t, conTrace, "the consume request's span", func(s []jaegertest.Span) bool { return len(s) == 1 })
			call := calls[0]
			if call.Parent() != conSpan || call.Tag("span.kind") != "server" {
				t.Fatalf("consume request span %+v is not the server's child of the caller's", call)
			}
			spans := j.WaitTrace(t, pubTrace, "receive "+api.q+" in the publish's trace", func(s []jaegertest.Span) bool {
				_, ok := jaegertest.Find(s, "receive "+api.q)
				return ok
			})
			publish, _ := jaegertest.Find(spans, "publish "+api.q)
			receive, _ := jaegertest.Find(spans, "receive "+api.q)
			if receive.Parent() != publish.SpanID || receive.Tag("span.kind") != "consumer" ||
				receive.Tag("messaging.sluice.delivery_count") != "1" || receive.Tag("messaging.operation.type") != "receive" {
				t.Errorf("receive span %+v is not the publish's consumer child, first delivery", receive)
			}
			linked := false
			for _, ref := range receive.References {
				linked = linked || ref.RefType == "FOLLOWS_FROM" && ref.TraceID == conTrace && ref.SpanID == call.SpanID
			}
			if !linked {
				t.Errorf("receive span %+v does not link to the consume request's span %s", receive, call.SpanID)
			}
		})
	}
}

// An HTTP consumer's nack keeps the span of the nack request: the job's next receive span, in the
// publish's trace, links to it, so the trace leads from the retry to the request that failed it.
func TestTraceHTTPNackLinksTheRetry(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	ts := tracedServer(t, j)
	tok := ts.token(t, "shop", tenant.PermPublish, tenant.PermConsume)
	send := func(method, path, body string) response {
		tp, _, _ := newTraceparent()
		return ts.sendTraced(t, method, path, tp, []byte(body), "Authorization", "Bearer "+tok, "Content-Type", "application/json")
	}
	pubHeader, pubTrace, _ := newTraceparent()
	wantStatus(t, ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/queues/orders/jobs", pubHeader, []byte(`{"payload":{"n":1}}`),
		"Authorization", "Bearer "+tok, "Content-Type", "application/json"), http.StatusCreated, "")
	var got struct {
		Jobs []struct {
			JobID string `json:"job_id"`
		} `json:"jobs"`
	}
	r := send(http.MethodPost, "/v1/ns/shop/consume", `{"queues":["orders"]}`)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("consume answered %s", r.Body)
	}
	nackHeader, nackTrace, _ := newTraceparent()
	wantStatus(t, ts.sendTraced(t, http.MethodPost, "/v1/ns/shop/queues/orders/jobs/"+got.Jobs[0].JobID+"/nack", nackHeader,
		[]byte(`{"delivery":1,"error":"failed","retry_after":0}`), "Authorization", "Bearer "+tok, "Content-Type", "application/json"),
		http.StatusOK, "")
	wantStatus(t, send(http.MethodPost, "/v1/ns/shop/consume", `{"queues":["orders"]}`), http.StatusOK, "")

	nack := j.WaitTrace(t, nackTrace, "the nack request's span", func(s []jaegertest.Span) bool { return len(s) == 1 })[0]
	spans := j.WaitTrace(t, pubTrace, "two receive spans", func(s []jaegertest.Span) bool {
		return len(jaegertest.All(s, "receive orders")) == 2
	})
	for _, receive := range jaegertest.All(spans, "receive orders") {
		linked := false
		for _, ref := range receive.References {
			linked = linked || ref.RefType == "FOLLOWS_FROM" && ref.TraceID == nackTrace && ref.SpanID == nack.SpanID
		}
		if want := receive.Tag("messaging.sluice.delivery_count") == "2"; linked != want {
			t.Errorf("receive span of delivery %s links to the nack request: %v, want %v (%+v)",
				receive.Tag("messaging.sluice.delivery_count"), linked, want, receive.References)
		}
	}
}
