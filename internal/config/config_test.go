package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRead(t *testing.T) {
	c, err := Read(write(t, "# where to tell me\nnotify = https://ntfy.sh/x?a=b=c\n\n  notify=desktop  \nnotify-stuck = 45m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notify) != 2 || c.Notify[0] != "https://ntfy.sh/x?a=b=c" || c.Notify[1] != "desktop" || c.NotifyStuck == nil || *c.NotifyStuck != 45*time.Minute {
		t.Errorf("config %+v", c)
	}
	if c, err := Read(filepath.Join(t.TempDir(), "missing")); err != nil || len(c.Notify) != 0 || c.NotifyStuck != nil {
		t.Errorf("missing file: %+v, %v", c, err)
	}
}

func TestReadRejects(t *testing.T) {
	for content, want := range map[string]string{
		"notify https://x\n":                    ":1: expected key = value",
		"\n\nnotfy = https://x/SECRET\n":        `:3: unknown key "notfy"`,
		"notify =\n":                            ":1: notify needs a destination",
		"notify-stuck = soon\n":                 `notify-stuck wants a duration such as 30m, got "soon"`,
		strings.Repeat("# padding\n", 8000):     "larger than 64 KiB",
		"notify = https://x/SECRET\nbad line\n": ":2: expected key = value",
	} {
		_, err := Read(write(t, content))
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", content[:min(len(content), 30)], err, want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("error shows a value: %v", err)
		}
	}
}

func TestPath(t *testing.T) {
	t.Setenv(Env, "/etc/wiggum.conf")
	if p := Path(); p != "/etc/wiggum.conf" {
		t.Errorf("with %s: %q", Env, p)
	}
	t.Setenv(Env, "")
	t.Setenv("XDG_CONFIG_HOME", "/x/cfg")
	if p := Path(); p != "/x/cfg/wiggum/config" {
		t.Errorf("with XDG_CONFIG_HOME: %q", p)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if p := Path(); p != "/home/u/.config/wiggum/config" {
		t.Errorf("with HOME: %q", p)
	}
}
