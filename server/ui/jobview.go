package ui

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/queue"
)

// callbackView is a callback job's call as the job page shows it: the secrets among its headers
// are not shown.
type callbackView struct {
	URL, Method, Timeout string
	Headers              []headerView
}

type headerView struct {
	Name, Value string
	Redacted    bool
}

// secretHeaderWords mark a header whose value is a credential: its name contains one of them.
var secretHeaderWords = []string{"auth", "cookie", "token", "secret", "key", "password", "signature", "session", "credential"}

func secretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretHeaderWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func viewCallback(cb *queue.Callback) *callbackView {
	if cb == nil {
		return nil
	}
	v := &callbackView{URL: cb.URL, Method: cb.Method, Timeout: roundDur(cb.Timeout)}
	for name, value := range cb.Header {
		h := headerView{Name: name, Value: value}
		if secretHeader(name) {
			h.Value, h.Redacted = "redacted ("+strconv.Itoa(len(value))+" characters)", true
		}
		v.Headers = append(v.Headers, h)
	}
	slices.SortFunc(v.Headers, func(a, b headerView) int { return strings.Compare(a.Name, b.Name) })
	return v
}

// jobExtras are what the job page shows beside the job's own fields: the actions its state
// allows, its lease (for the lease actions), its callback and the callback's tries.
func (u *UI) jobExtras(ctx context.Context, j *queue.Job, data map[string]any) error {
	data["Actions"] = stateActions[j.State]
	if j.State == queue.StateLeased {
		data["Lease"] = j.ID + ":" + strconv.Itoa(j.Deliveries)
	}
	data["PayloadDropped"] = j.State == queue.StateDone && len(j.Payload) == 0
	if j.Callback == nil {
		return nil
	}
	data["Callback"] = viewCallback(j.Callback)
	attempts, err := u.cfg.Queue.CallbackAttempts(ctx, j.Namespace, j.Queue, j.ID)
	if err != nil {
		return err
	}
	data["Attempts"] = attempts
	return nil
}
