package callback

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/outbound"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
)

// TaskCallbacksConfig configures TaskCallbacks. Queue and Redis are required; every other
// field's comment states its default.
type TaskCallbacksConfig struct {
	// Queue is the job queue the completion callbacks are published to, as callback jobs that a
	// Deliverer of the same queue sends. Required.
	Queue *queue.Client
	// Redis is the Redis of Queue, where the namespaces' callback settings live. Required.
	Redis redis.UniversalClient
	// QueueName is the queue, in each task's namespace, that carries its completion callbacks.
	// Default "task-callbacks".
	QueueName string
	// Tries is the most deliveries of one completion callback (a failed try is retried with the
	// callback backoff: 1s doubling up to 10m). Default 10.
	Tries int
	// AllowPrivate is the Deliverer's AllowPrivate: with it, a callback to a loopback or private
	// address is not refused at submit. Default false: only namespaces whose settings allow it
	// may name one.
	AllowPrivate bool
	// SettingsTTL is how long a namespace's callback settings are cached. Default 1s.
	SettingsTTL time.Duration
	// Logger receives the logs. Default slog.Default().
	Logger *slog.Logger
}

// TaskCallbacks delivers the completion callbacks of the request queue's tasks through the job
// callback machinery: it is a relay.CompletionSink (relay.Config.Completions). At submit it
// refuses a callback URL outside the namespace's allowed destinations, or on a private address
// the namespace may not reach; when a task ends it publishes the task's final state (its JSON, as
// GET /v1/tasks/{id} shows it) as a callback job of the namespace's QueueName queue, which a
// Deliverer sends signed with the namespace's secrets and retries like any callback. The job's
// unique key is the task id, so a task handed on twice (two processes, or one that died after
// publishing) while its callback is still pending makes one job.
type TaskCallbacks struct {
	cfg      TaskCallbacksConfig
	settings *settingsCache
}

var _ relay.CompletionSink = (*TaskCallbacks)(nil)

// NewTaskCallbacks returns the completion callback sink of cfg.Queue.
func NewTaskCallbacks(cfg TaskCallbacksConfig) (*TaskCallbacks, error) {
	cfg.QueueName = cmp.Or(cfg.QueueName, "task-callbacks")
	cfg.Tries = cmp.Or(cfg.Tries, 10)
	cfg.SettingsTTL = cmp.Or(cfg.SettingsTTL, time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var errs []error
	if cfg.Queue == nil {
		errs = append(errs, errors.New("callback: TaskCallbacksConfig.Queue is required"))
	}
	if cfg.Redis == nil {
		errs = append(errs, errors.New("callback: TaskCallbacksConfig.Redis is required"))
	}
	if !queueName(cfg.QueueName) {
		errs = append(errs, fmt.Errorf("callback: TaskCallbacksConfig.QueueName %q: %s", cfg.QueueName, queueNameRule))
	}
	if cfg.Tries < 1 || cfg.SettingsTTL < time.Millisecond {
		errs = append(errs, errors.New("callback: TaskCallbacksConfig.Tries and SettingsTTL must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	store, err := newStore(cfg.Redis, cfg.Queue.Config().Prefix, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &TaskCallbacks{cfg: cfg, settings: newSettingsCache(store, cfg.SettingsTTL)}, nil
}

// CheckCallback refuses (a *sluice.FieldError naming callback.url) a URL that is not under one of
// the namespace's allowed destinations, or whose host is a loopback, private or other special
// address (or localhost) while neither the namespace nor AllowPrivate allows them. A name that
// resolves to such an address is refused when the call is dialled (the callback job then goes to
// the dead letter).
func (tc *TaskCallbacks) CheckCallback(ctx context.Context, namespace string, cb relay.Callback) error {
	set, err := tc.settings.get(ctx, namespace)
	if err != nil {
		return err
	}
	if !outbound.UnderPrefix(cb.URL, set.Destinations...) {
		return fieldErr("callback.url", "%q is not under any of the namespace's allowed callback destinations (admin API: /v1/namespaces/%s/callbacks)", cb.URL, namespace)
	}
	if !tc.cfg.AllowPrivate && !set.AllowPrivate && privateHost(cb.URL) {
		return fieldErr("callback.url", "%q names a loopback or private address, which callbacks of namespace %s may not reach "+
			"(its allow_private setting, or the server's callback_allow_private, allows them)", cb.URL, namespace)
	}
	return nil
}

// privateHost reports whether a URL's host is written as an address the outbound engine refuses
// (loopback, private, link-local, ...) or is localhost.
func privateHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false // CheckPrefix refused it already
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false // a name: judged on the address it resolves to, when dialled
	}
	return outbound.CheckAddr(ip) != nil
}

// PutCompletions publishes each ended task's completion callback as a callback job (one round
// trip per queue). A task whose JSON is larger than a job payload may be goes without its result
// (result_truncated: the receiver reads it with GET /v1/tasks/{id}); one whose job the queue
// refuses anyway is logged and dropped, so it cannot hold back the others.
func (tc *TaskCallbacks) PutCompletions(ctx context.Context, tasks ...relay.Task) error {
	ps := make([]queue.PublishParams, 0, len(tasks))
	for _, t := range tasks {
		if t.Callback == nil {
			continue
		}
		p, err := tc.publishParams(t)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil
	}
	_, err := tc.cfg.Queue.PublishMany(ctx, ps)
	if !errors.Is(err, sluice.ErrInvalid) {
		return err
	}
	// One refused job refuses the batch: publish one by one, dropping the refused.
	for _, p := range ps {
		if _, err := tc.cfg.Queue.Publish(ctx, p); errors.Is(err, sluice.ErrInvalid) {
			tc.cfg.Logger.Warn("callback: a task's completion callback was refused by the queue; it is not sent",
				"namespace", p.Namespace, "task_id", strings.TrimPrefix(p.UniqueKey, taskKeyPrefix), "error", err)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// taskKeyPrefix starts the unique key of a completion callback job: "task:" and the task id.
const taskKeyPrefix = "task:"

// publishParams is the callback job of an ended task.
func (tc *TaskCallbacks) publishParams(t relay.Task) (queue.PublishParams, error) {
	payload, err := json.Marshal(t.JSON())
	if err != nil {
		return queue.PublishParams{}, fmt.Errorf("callback: encode task %s: %w", t.ID, err)
	}
	if len(payload) > tc.cfg.Queue.Config().MaxPayloadBytes {
		j := t.JSON()
		j.TaskResult, j.TaskResultBase64, j.ResultTruncated = nil, "", true
		if payload, err = json.Marshal(j); err != nil {
			return queue.PublishParams{}, fmt.Errorf("callback: encode task %s: %w", t.ID, err)
		}
	}
	cb := t.Callback
	return queue.PublishParams{
		Namespace: t.Namespace, Queue: tc.cfg.QueueName, Payload: payload, Tries: tc.cfg.Tries,
		UniqueKey: taskKeyPrefix + t.ID,
		Callback:  &queue.Callback{URL: cb.URL, Method: http.MethodPost, Header: cb.Header, Timeout: cb.Timeout},
	}, nil
}
