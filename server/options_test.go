package server

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestOptionDefaultsMatchConfig(t *testing.T) {
	t.Parallel()
	var s Settings
	for _, o := range Options() {
		if o.Default == `""` {
			continue
		}
		if err := o.Set(&s, o.Default); err != nil {
			t.Fatalf("default of %s: %v", o.Key, err)
		}
	}
	got, want := s.withDefaults(), Config{}.withDefaults()
	got.Logger, got.Out, want.Logger, want.Out = nil, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("documented defaults %+v differ from Config's %+v", got, want)
	}
	if s.LogFormat != "text" || s.LogLevel != "info" {
		t.Fatalf("log defaults = %q %q", s.LogFormat, s.LogLevel)
	}
}

func TestLoadSettingsPrecedence(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sluice.json")
	err := os.WriteFile(file, []byte(`{"prefix": "fromfile", "public_addr": ":1", "shutdown_timeout": 2.5,
		"max_consume_timeout": "90s", "max_body_bytes": 2048, "log_format": "json"}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SLUICE_PUBLIC_ADDR": ":2", "SLUICE_ADMIN_ADDR": "127.0.0.1:3", "SLUICE_TOKEN_CACHE_TTL": "250ms"}
	s, err := LoadSettings(SettingsSources{
		File:   file,
		Getenv: func(k string) string { return env[k] },
		Flags:  map[string]string{"admin_addr": "127.0.0.1:4", "log_level": "debug"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Prefix != "fromfile" || s.PublicAddr != ":2" || s.AdminAddr != "127.0.0.1:4" || s.ShutdownTimeout != 2500*time.Millisecond ||
		s.MaxConsumeTimeout != 90*time.Second || s.MaxBodyBytes != 2048 || s.TokenCacheTTL != 250*time.Millisecond ||
		s.LogFormat != "json" || s.LogLevel != "debug" {
		t.Fatalf("settings = %+v", s)
	}
	for _, c := range []struct {
		src  SettingsSources
		want string
	}{
		{SettingsSources{Flags: map[string]string{"shutdown_timeout": "soon"}}, "shutdown_timeout"},
		{SettingsSources{Flags: map[string]string{"max_body_bytes": "1MiB"}}, "max_body_bytes"},
		{SettingsSources{Flags: map[string]string{"log_format": "xml"}}, "log_format"},
		{SettingsSources{Getenv: func(k string) string { return map[string]string{"SLUICE_LOG_LEVEL": "loud"}[k] }}, "log_level"},
		{SettingsSources{File: writeFile(t, `{"colour": "red"}`)}, `unknown key "colour"`},
		{SettingsSources{File: writeFile(t, `[1]`)}, "not a JSON object"},
		{SettingsSources{File: writeFile(t, `{"prefix": ["a"]}`)}, "prefix"},
		{SettingsSources{File: filepath.Join(t.TempDir(), "missing.json")}, "config file"},
	} {
		if _, err := LoadSettings(c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadSettings(%+v) = %v, want an error naming %s", c.src, err, c.want)
		}
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDocsListEveryOption keeps the configuration reference of docs/server.md in step.
func TestDocsListEveryOption(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/server.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range append(Options(), Option{Key: "config", Env: ConfigFileEnv}) {
		for _, want := range []string{"`" + o.Key + "`", "`" + o.Env + "`", "`--" + o.Flag() + "`"} {
			if o.Key == "config" && want == "`config`" {
				continue // flag and environment only
			}
			if !strings.Contains(string(doc), want) {
				t.Errorf("docs/server.md does not mention %s", want)
			}
		}
	}
}

func TestExampleConfigLoads(t *testing.T) {
	t.Parallel()
	s, err := LoadSettings(SettingsSources{File: "../deploy/sluice.example.json"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Config.withDefaults().validate(); err != nil {
		t.Fatalf("the example config does not validate: %v", err)
	}
}

// The config file takes endpoints as a JSON object and keys as a list.
func TestLoadSettingsRelay(t *testing.T) {
	t.Parallel()
	k := strings.Repeat("k", 32)
	s, err := LoadSettings(SettingsSources{File: writeFile(t, `{"relay_permit_keys": ["`+k+`", "`+k+`2"],
		"relay_endpoints": {"gen": {"target_url": "http://gen.internal/v1", "qps": 5, "timeout": 2.5}},
		"archive_dsn": "u:p@tcp(db:3306)/sluice", "relay_workers": -1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RelayPermitKeys) != 2 || s.RelayEndpoints["gen"].TargetURL != "http://gen.internal/v1" ||
		*s.RelayEndpoints["gen"].Timeout != 2.5 || s.RelayWorkers != -1 || s.ArchiveDSN == "" {
		t.Fatalf("settings %+v", s.Config)
	}
	for body, want := range map[string]string{
		`{"relay_permit_keys": ["short"]}`:              "at least 32",
		`{"relay_endpoints": {"gen": {"target": "x"}}}`: "relay_endpoints",
		`{"relay_endpoints": ["x"]}`:                    "relay_endpoints",
		`{"relay_allow_private": "maybe"}`:              "relay_allow_private",
	} {
		if _, err := LoadSettings(SettingsSources{File: writeFile(t, body)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %s", body, err, want)
		}
	}
}
