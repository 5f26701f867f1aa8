package redisx_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestNewClientKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want string
	}{
		{"redis://127.0.0.1:6379/2", "*redis.Client"},
		{"rediss://user:pw@example.com:6380", "*redis.Client"},
		{"redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "*redis.ClusterClient"},
		{"redis+sentinel://127.0.0.1:26379,127.0.0.1:26380/mymaster/1", "*redis.Client"},
	}
	for _, tt := range tests {
		c, err := redisx.NewClient(tt.url)
		if err != nil {
			t.Fatalf("NewClient(%q): %v", tt.url, err)
		}
		if got := typeName(c); got != tt.want {
			t.Errorf("NewClient(%q) = %s, want %s", tt.url, got, tt.want)
		}
		if got := protocol(c); got != 2 {
			t.Errorf("NewClient(%q) speaks RESP%d, want RESP2 by default", tt.url, got)
		}
		_ = c.Close()
	}
}

func TestNewClientErrors(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"http://x":                    "unsupported scheme",
		"redis+sentinel://h:1":        "names the master",
		"redis+cluster://":            "no host",
		"redis+cluster://a:1,,b:2":    "empty host",
		"redis+weird://h:1":           "unsupported scheme",
		"redis://h:1/notanumber/more": "redis url",
	} {
		_, err := redisx.NewClient(url)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewClient(%q) error = %v, want it to mention %q", url, err, want)
		}
	}
}

func TestLoadScriptsOnClusterAndStandalone(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		ctx := context.Background()
		s := redis.NewScript("return KEYS[1]")
		if err := redisx.LoadScripts(ctx, env.Client, s); err != nil {
			t.Fatalf("LoadScripts: %v", err)
		}
		// EVALSHA inside a pipeline works only when the script is loaded on the key's node.
		pipe := env.Client.Pipeline()
		cmds := make([]*redis.Cmd, 0, 8)
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			cmds = append(cmds, s.EvalSha(ctx, pipe, []string{env.Prefix + ":{" + k + "}"}))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipelined EVALSHA: %v", err)
		}
		for _, c := range cmds {
			if !strings.HasPrefix(c.Val().(string), env.Prefix) {
				t.Fatalf("script returned %v", c.Val())
			}
		}
	})
}

func protocol(c redis.UniversalClient) int {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Protocol
	case *redis.ClusterClient:
		return c.Options().Protocol
	default:
		return 0
	}
}

func TestNewClientKeepsAnExplicitProtocol(t *testing.T) {
	t.Parallel()
	c, err := redisx.NewClient("redis://127.0.0.1:6379?protocol=3")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := protocol(c); got != 3 {
		t.Fatalf("protocol = %d, want 3", got)
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.Client:
		return "*redis.Client"
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	default:
		return "other"
	}
}
