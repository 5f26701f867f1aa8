// Package redisx builds Redis clients from URLs and holds the small helpers every package that runs
// Lua scripts needs.
package redisx

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a client for a Redis URL in one of these forms:
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]           standalone
//	rediss://...                                                           standalone over TLS
//	redis+sentinel://[[user]:password@]host:port[,host:port...]/master[/db][?option=value...]
//	redis+cluster://[[user]:password@]host:port[,host:port...][?option=value...]
//	rediss+sentinel://..., rediss+cluster://...                            the same over TLS
//
// Options are go-redis option names in snake case (dial_timeout=3s, pool_size=50, ...). For
// Sentinel, the user and password in the URL authenticate to the sentinels; the master's are the
// username= and password= options.
//
// The protocol is RESP2 unless the URL says protocol=3: Sluice needs nothing RESP3 adds, and
// go-redis checks every RESP3 reply for push notifications, about 5% of a busy server's CPU.
func NewClient(rawURL string) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	if q := u.Query(); q.Get("protocol") == "" {
		q.Set("protocol", "2")
		u.RawQuery = q.Encode()
		rawURL = u.String()
	}
	base, mode, _ := strings.Cut(u.Scheme, "+")
	if base != "redis" && base != "rediss" {
		return nil, fmt.Errorf("redis url: unsupported scheme %q (want redis, rediss, redis+sentinel or redis+cluster)", u.Scheme)
	}
	switch mode {
	case "":
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		return redis.NewClient(opts), nil
	case "cluster":
		gu, err := multiHostURL(u, base, "")
		if err != nil {
			return nil, err
		}
		opts, err := redis.ParseClusterURL(gu)
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		return redis.NewClusterClient(opts), nil
	case "sentinel":
		master, db, _ := strings.Cut(strings.Trim(u.Path, "/"), "/")
		if master == "" {
			return nil, errors.New("redis url: a sentinel URL names the master: redis+sentinel://host:port/master")
		}
		gu, err := multiHostURL(u, base, db)
		if err != nil {
			return nil, err
		}
		pu, _ := url.Parse(gu)
		q := pu.Query()
		q.Set("master_name", master)
		pu.RawQuery = q.Encode()
		opts, err := redis.ParseFailoverURL(pu.String())
		if err != nil {
			return nil, fmt.Errorf("redis url: %w", err)
		}
		return redis.NewFailoverClient(opts), nil
	default:
		return nil, fmt.Errorf("redis url: unsupported scheme %q", u.Scheme)
	}
}

// multiHostURL turns host1,host2,host3 into go-redis's form: the first host in the authority and
// the others as addr= options.
func multiHostURL(u *url.URL, scheme, db string) (string, error) {
	hosts := strings.Split(u.Host, ",")
	if hosts[0] == "" {
		return "", errors.New("redis url: no host")
	}
	q := u.Query()
	for _, h := range hosts[1:] {
		if h == "" {
			return "", errors.New("redis url: empty host in list")
		}
		q.Add("addr", h)
	}
	out := url.URL{Scheme: scheme, User: u.User, Host: hosts[0], RawQuery: q.Encode()}
	if db != "" {
		out.Path = "/" + db
	}
	return out.String(), nil
}
