package rooms_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/rooms"
)

func TestParseProxyHosts(t *testing.T) {
	t.Parallel()
	got, err := rooms.ParseProxyHosts(" shop.example.com=shop, *=main ,")
	if err != nil || len(got) != 2 || got["shop.example.com"] != "shop" || got["*"] != "main" {
		t.Fatalf("ParseProxyHosts = %v, %v", got, err)
	}
	if got, err := rooms.ParseProxyHosts(""); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"shop", "=shop", "a.com=", "a.com/x=shop", "a.com=x,a.com=y"} {
		if _, err := rooms.ParseProxyHosts(bad); err == nil {
			t.Errorf("ParseProxyHosts(%q) accepted", bad)
		}
	}
}

func TestRoomJSONConfig(t *testing.T) {
	t.Parallel()
	n, secs, open, lang := 5, 90.0, "2030-01-02T03:04:05Z", "zh"
	cfg, err := rooms.RoomJSON{MaxActive: &n, QueueTimeout: &secs, OpenAt: &open, Language: &lang}.Config()
	if err != nil || cfg.MaxActive != 5 || cfg.QueueTimeout != 90*time.Second || cfg.OpenAt.Year() != 2030 || cfg.Language != "zh" {
		t.Fatalf("Config = %+v, %v", cfg, err)
	}
	neg, badTime := -1.0, "soon"
	for field, j := range map[string]rooms.RoomJSON{
		"max_active":      {},
		"session_timeout": {MaxActive: &n, SessionTimeout: &neg},
		"open_at":         {MaxActive: &n, OpenAt: &badTime},
	} {
		_, err := j.Config()
		var e *httpapi.Error
		if !errors.As(err, &e) || e.Code != httpapi.CodeInvalidArgument || e.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}
