package relay

import (
	"encoding/base64"
	"time"
	"unicode/utf8"
)

// TaskJSON is a task as JSON: what the server answers to GET /v1/tasks/{id}, and the body of a
// task's completion callback. Times are RFC 3339 (null before they happen); wait_time is in
// seconds, null when it cannot be estimated. A result that is not UTF-8 comes as
// task_result_base64.
type TaskJSON struct {
	TaskID            string              `json:"task_id"`
	TaskStatus        string              `json:"task_status"`
	TaskType          string              `json:"task_type"`
	Endpoint          string              `json:"endpoint"`
	Priority          int                 `json:"priority"`
	TaskResult        *string             `json:"task_result"`
	TaskResultBase64  string              `json:"task_result_base64,omitempty"`
	TaskResultHeaders map[string][]string `json:"task_result_headers,omitempty"`
	ResultTruncated   bool                `json:"result_truncated,omitempty"`
	HTTPStatus        int                 `json:"http_status"`
	Error             string              `json:"error,omitempty"`
	WaitNum           int64               `json:"wait_num"`
	WaitTime          *float64            `json:"wait_time"`
	CreatedAt         *time.Time          `json:"created_at"`
	StartedAt         *time.Time          `json:"started_at"`
	EndedAt           *time.Time          `json:"ended_at"`
	Tries             int                 `json:"tries"`
	MaxTries          int                 `json:"max_tries"`
	Permit            string              `json:"permit,omitempty"`
	PermitExpiresAt   *time.Time          `json:"permit_expires_at,omitempty"`
	Archived          bool                `json:"archived,omitempty"`
	Callback          *CallbackJSON       `json:"callback,omitempty"`
}

// CallbackJSON is a completion callback as JSON, in the shape of a job's callback (timeout in
// seconds).
type CallbackJSON struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Timeout float64           `json:"timeout"`
}

// JSON returns the task as JSON shows it.
func (t Task) JSON() TaskJSON {
	at := func(x time.Time) *time.Time {
		if x.IsZero() {
			return nil
		}
		return &x
	}
	res := TaskJSON{
		TaskID: t.ID, TaskStatus: string(t.Status), TaskType: string(t.Type), Endpoint: t.Endpoint,
		Priority: t.Priority, HTTPStatus: t.HTTPStatus, Error: t.Error, WaitNum: max(t.WaitNum, 0),
		CreatedAt: at(t.CreatedAt), StartedAt: at(t.StartedAt), EndedAt: at(t.EndedAt),
		Tries: t.Tries, MaxTries: t.MaxTries, Permit: t.Permit, PermitExpiresAt: at(t.PermitExpires),
		ResultTruncated: t.ResultTruncated, Archived: t.Archived, TaskResultHeaders: t.ResultHeader,
	}
	if t.WaitNum >= 0 && t.WaitKnown {
		s := t.WaitTime.Seconds()
		res.WaitTime = &s
	}
	switch {
	case t.Result == nil:
	case utf8.Valid(t.Result):
		s := string(t.Result)
		res.TaskResult = &s
	default:
		res.TaskResultBase64 = base64.StdEncoding.EncodeToString(t.Result)
	}
	if cb := t.Callback; cb != nil {
		res.Callback = &CallbackJSON{URL: cb.URL, Headers: cb.Header, Timeout: cb.Timeout.Seconds()}
	}
	return res
}
