package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
)

// jobFlags are the flags that describe a job's fields other than its timing: `sluice publish`
// and `sluice schedule set` (whose ticks say when) share them.
type jobFlags struct {
	fs                                           *flag.FlagSet
	priority, tries                              *int
	ttl, ttr, backoffBase, backoffMax, uniqueFor seconds
	uniqueKey                                    *string
	attrs                                        keyValues
	asString, raw                                *bool
	callbackURL, callbackMethod                  *string
	callbackHeaders                              keyValues
	callbackTimeout                              seconds
}

func addJobFlags(fs *flag.FlagSet) *jobFlags {
	jf := &jobFlags{fs: fs, attrs: keyValues{}, callbackHeaders: keyValues{}}
	jf.priority = fs.Int("priority", 0, "`priority` 0..255; higher runs first")
	jf.tries = fs.Int("tries", 0, "most deliveries the job gets (default: the server's, 3)")
	fs.Var(&jf.ttl, "ttl", "the job expires if not delivered within this `duration`")
	fs.Var(&jf.ttr, "ttr", "lease a consumer gets when its consume names none (`duration`)")
	fs.Var(&jf.backoffBase, "backoff", "retry a failed delivery after this `duration`, doubled every try (default: at once)")
	fs.Var(&jf.backoffMax, "backoff-max", "cap the retry delay of --backoff at this `duration`")
	jf.uniqueKey = fs.String("unique-key", "", "deduplicate: while a job with this `key` is pending, publishing it again returns that job")
	fs.Var(&jf.uniqueFor, "unique-for", "hold the unique key at most this `duration` (default: the server's, 24h)")
	fs.Var(jf.attrs, "attr", "attribute `key=value` delivered with the job (repeatable)")
	jf.asString = fs.Bool("string", false, "send the payload as a JSON string even when it parses as JSON")
	jf.raw = fs.Bool("raw", false, "send the payload bytes unchanged (base64 on the wire)")
	jf.callbackURL = fs.String("callback", "", "deliver the job to this `URL` when due instead of to consumers (signed; see docs/callbacks.md)")
	jf.callbackMethod = fs.String("callback-method", "", "HTTP `method` of the callback (default POST)")
	fs.Var(jf.callbackHeaders, "callback-header", "header `name=value` sent with the callback (repeatable)")
	fs.Var(&jf.callbackTimeout, "callback-timeout", "how long one callback call may take (`duration`, default 30s)")
	return jf
}

// job builds the job's JSON fields from the flags and the payload: arg when given and not "-",
// else standard input.
func (jf *jobFlags) job(env *Env, arg string, given bool) (map[string]any, error) {
	if *jf.raw && *jf.asString {
		return nil, usagef("--raw and --string exclude each other")
	}
	if *jf.callbackURL == "" && (*jf.callbackMethod != "" || len(jf.callbackHeaders) > 0 || jf.callbackTimeout.set) {
		return nil, usagef("--callback-method, --callback-header and --callback-timeout need --callback")
	}
	var payload []byte
	if given && arg != "-" {
		payload = []byte(arg)
	} else {
		var err error
		if payload, err = io.ReadAll(io.LimitReader(env.Stdin, 64<<20)); err != nil {
			return nil, fmt.Errorf("read the payload from standard input: %w", err)
		}
		if !*jf.raw {
			payload = bytes.TrimRight(payload, "\r\n")
		}
	}
	job := map[string]any{}
	switch {
	case *jf.raw:
		job["payload_base64"] = base64.StdEncoding.EncodeToString(payload)
	case !*jf.asString && json.Valid(payload):
		job["payload"] = json.RawMessage(payload)
	default:
		job["payload"] = string(payload)
	}
	jf.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "priority":
			job["priority"] = *jf.priority
		case "tries":
			job["tries"] = *jf.tries
		}
	})
	for k, d := range map[string]seconds{"ttl": jf.ttl, "ttr": jf.ttr, "unique_for": jf.uniqueFor} {
		if d.set {
			job[k] = secs(d.d)
		}
	}
	if jf.backoffBase.set || jf.backoffMax.set {
		b := map[string]float64{}
		if jf.backoffBase.set {
			b["base"] = secs(jf.backoffBase.d)
		}
		if jf.backoffMax.set {
			b["max"] = secs(jf.backoffMax.d)
		}
		job["backoff"] = b
	}
	if *jf.uniqueKey != "" {
		job["unique_key"] = *jf.uniqueKey
	}
	if len(jf.attrs) > 0 {
		job["attributes"] = map[string]string(jf.attrs)
	}
	if *jf.callbackURL != "" {
		cb := map[string]any{"url": *jf.callbackURL}
		if *jf.callbackMethod != "" {
			cb["method"] = *jf.callbackMethod
		}
		if len(jf.callbackHeaders) > 0 {
			cb["headers"] = map[string]string(jf.callbackHeaders)
		}
		if jf.callbackTimeout.set {
			cb["timeout"] = secs(jf.callbackTimeout.d)
		}
		job["callback"] = cb
	}
	return job, nil
}
