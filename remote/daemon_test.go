package remote

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/gitserver"
)

func TestParseDaemonURL(t *testing.T) {
	for raw, want := range map[string]*daemon{
		"git://127.0.0.1:9999/r.git":   {addr: "127.0.0.1:9999", host: "127.0.0.1:9999", path: "/r.git"},
		"git://example.com/team/r.git": {addr: "example.com:9418", host: "example.com", path: "/team/r.git"},
		"git://[::1]:7/r.git":          {addr: "[::1]:7", host: "[::1]:7", path: "/r.git"},
		"git://h/~me/r.git":            {addr: "h:9418", host: "h", path: "/~me/r.git"},
		"git://h/a%20b.git":            nil, // git may spell an escape differently on the wire
		"git://u@h/r.git":              nil,
		"git://h":                      nil,
		"http://h/r.git":               nil,
		"ssh://h/r.git":                nil,
		"h:r.git":                      nil,
		"/srv/r.git":                   nil,
		"file:///srv/r.git":            nil,
	} {
		got := parseDaemonURL(raw)
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("parseDaemonURL(%q) = %+v, want %+v", raw, got, want)
		}
	}
}

// A git:// remote is connected to by this process (TCP_NODELAY), unless
// the clone routes git:// through a proxy of its own or fetches from
// another URL than it pushes to; either way the calls work.
func TestDaemonConnectedHere(t *testing.T) {
	f := newFixture(t, "daemon")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		config [][]string
		own    bool
	}{
		{"plain", nil, true},
		{"proxy", [][]string{{"config", "core.gitProxy", "/nonexistent-proxy for example.invalid"}}, false},
		{"pushurl", [][]string{{"remote", "set-url", "--push", "origin", f.srv.URL("r.git") + "/"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(f.root, "m-"+tc.name)
			gitserver.Clone(t, f.srv.URL("r.git"), dir)
			for _, args := range tc.config {
				gitIn(t, dir, args...)
			}
			repo, err := git.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(ctx, repo, "origin", Options{Timeout: 20 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if (r.daemon != nil) != tc.own {
				t.Fatalf("connected here: %v, want %v", r.daemon != nil, tc.own)
			}
			v, err := r.Fetch(ctx, target)
			if err != nil || v.Tip == "" {
				t.Fatalf("fetch: %v", err)
			}
			story := "S-" + tc.name
			h, err := r.Claim(ctx, story, v)
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			now, err := r.lsRemote(ctx, "read", []update{{dst: h.Claim().Ref}})
			if err != nil || now[h.Claim().Ref] != h.Claim().Commit {
				t.Fatalf("the claim is not on the server: %v %v", now, err)
			}
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// git's warnings, which may run over several lines, come before its
// error: the message shows the error (the fetch warning about forced
// updates once took all three lines and hid it).
func TestFirstLinesShowsTheError(t *testing.T) {
	in := "warning: fetch normally indicates which branches had a forced update,\nbut that check has been disabled; to re-enable, use '--show-forced-updates'\nflag or run 'git config fetch.showForcedUpdates true'\nfatal: unable to access 'x': Could not resolve host\nmore"
	if got := firstLines(in, 3); got != "fatal: unable to access 'x': Could not resolve host / more" {
		t.Errorf("got %q", got)
	}
	if got := firstLines("a\nb\nc\nd", 3); got != "a / b / c" {
		t.Errorf("got %q", got)
	}
}
