package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/conformance/fakemodel"
	"github.com/wiggum-dev/wiggum/internal/sandboxdirs"
)

// wiggumDir holds the wiggum binary built once for the whole suite; the
// hooks the clients run find it on PATH.
var wiggumDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.Command("go", "build", "-o", "tmp/wiggum", "./cmd/wiggum")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build wiggum: %v\n%s", err, out)
		return 1
	}
	wiggumDir = filepath.Join(root, "tmp")
	// What codex's sandbox may leave in /tmp, missing now: what the
	// suite's codex runs leave, no process has mounted and is empty, the
	// suite takes back (sandboxdirs, as the loop does after each attempt).
	missing := sandboxdirs.Missing([]string{"/tmp"})
	code := m.Run()
	for _, p := range sandboxdirs.TakeBack(missing) {
		fmt.Fprintf(os.Stderr, "conformance: removed %s, an empty directory codex's sandbox left (%s)\n", p, sandboxdirs.Issue)
	}
	return code
}

// world is one scenario's repository, remote, home and fake model.
type world struct {
	t      *testing.T
	c      client
	srv    *fakemodel.Server
	dir    string // the working tree
	remote string // a bare repository, the tree's origin
	env    []string
	ticker string // tickingWorld's ticker.log, once found
}

// failingTest is a node test that fails, so `npm test` in the tree fails
// like a real project's broken test run (Node is on every machine that
// runs these clients; a Go toolchain in the agents' sandboxes is not).
const failingTest = `const test = require("node:test");
const assert = require("node:assert");
test("broken", () => { assert.fail("broken on purpose"); });
`

// newWorld makes a git repository with a one-story plan, a failing node
// test, a bare origin, and wiggum's hooks installed for c (and git's).
func newWorld(t *testing.T, c client, turns ...fakemodel.Turn) *world {
	t.Helper()
	w := newMachine(t, c, turns...)
	writeFile(t, filepath.Join(w.dir, "plan.md"), "- [ ] US-1: make the change\n")
	writeFile(t, filepath.Join(w.dir, "package.json"), `{"name": "app", "private": true, "scripts": {"test": "node --test"}}`+"\n")
	writeFile(t, filepath.Join(w.dir, "app.test.js"), failingTest)
	w.git("init", "-q", "-b", "main")
	w.git("add", "-A")
	w.git("commit", "-q", "-m", "init")
	w.cmd(filepath.Dir(w.dir), "git", "init", "-q", "--bare", w.remote)
	w.git("remote", "add", "origin", w.remote)
	w.git("push", "-q", "origin", "main")
	if c.name != "" {
		w.wiggum(0, "install", "--"+c.name, "--git")
	} else {
		w.wiggum(0, "install", "--git")
	}
	w.git("add", "-A")
	w.git("commit", "-q", "--allow-empty", "-m", "wiggum hooks")
	return w
}

// clone is another machine working on w's origin: a clone of it with a
// home and a fake model of its own, and wiggum's git hooks installed (the
// agent's hook settings come with the clone).
func (w *world) clone(turns ...fakemodel.Turn) *world {
	w.t.Helper()
	x := newMachine(w.t, w.c, turns...)
	x.remote = w.remote
	x.cmd(filepath.Dir(x.dir), "git", "clone", "-q", w.remote, x.dir)
	x.wiggum(0, "install", "--git")
	return x
}

// newMachine is a world with no repository yet: a home, a fake model and
// the environment pointing the client at it.
func newMachine(t *testing.T, c client, turns ...fakemodel.Turn) *world {
	t.Helper()
	bin := ""
	if c.name != "" {
		bin = c.binDir(t) + string(os.PathListSeparator)
	}
	srv, err := fakemodel.Start(turns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	base := t.TempDir()
	w := &world{t: t, c: c, srv: srv, dir: filepath.Join(base, "work"), remote: filepath.Join(base, "origin.git")}
	home := filepath.Join(base, "home")
	w.env = append(os.Environ(),
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"PATH="+bin+wiggumDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false",
		"TERM=dumb", "NO_COLOR=1", "CI=",
		// gemini writes an error report for every failed request there.
		"TMPDIR="+filepath.Join(base, "tmp"),
	)
	if c.env != nil {
		w.env = append(w.env, c.env(t, home, srv.URL)...)
	}
	writeFile(t, filepath.Join(home, ".gitconfig"), "[init]\n\tdefaultBranch = main\n")
	if err := os.MkdirAll(filepath.Join(base, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// cmd runs a command and fails the test unless it exits 0.
func (w *world) cmd(dir, name string, args ...string) string {
	w.t.Helper()
	out, code := w.exec(dir, name, args...)
	if code != 0 {
		w.t.Fatalf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, out)
	}
	return out
}

func (w *world) exec(dir, name string, args ...string) (string, int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = w.env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return string(out), ee.ExitCode()
	}
	w.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	return "", -1
}

func (w *world) git(args ...string) string {
	w.t.Helper()
	return w.cmd(w.dir, "git", args...)
}

// wiggum runs wiggum in the tree and checks its exit code.
func (w *world) wiggum(want int, args ...string) string {
	w.t.Helper()
	out, code := w.exec(w.dir, filepath.Join(wiggumDir, "wiggum"), args...)
	if code != want {
		w.t.Fatalf("wiggum %s: exit %d, want %d\n%s\nrequests:\n%s", strings.Join(args, " "), code, want, out, w.requestLog())
	}
	return out
}

// run is `wiggum run --agent CLIENT` over the one-story plan.
func (w *world) run(want int, extra ...string) string {
	w.t.Helper()
	args := append([]string{"run", "--agent", w.c.name, "--plan", "plan.md", "--retries", "0", "--timeout", "90s", "--grace", "2s"}, extra...)
	return w.wiggum(want, args...)
}

// remoteRefs lists the refs of the bare origin.
func (w *world) remoteRefs() string {
	w.t.Helper()
	out, _ := w.exec(w.remote, "git", "for-each-ref", "--format=%(refname)")
	return out
}

// backups lists refs/wiggum/backup/ in the tree.
func (w *world) backups() []string {
	w.t.Helper()
	return strings.Fields(w.git("for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"))
}

// events reads .ralph/wiggum/events.jsonl.
func (w *world) events() []map[string]any {
	w.t.Helper()
	data, err := os.ReadFile(filepath.Join(w.dir, ".ralph", "wiggum", "events.jsonl"))
	if err != nil {
		w.t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			w.t.Fatalf("events.jsonl: %v: %s", err, line)
		}
		out = append(out, e)
	}
	return out
}

// event returns the first event whose "event" field is name.
func (w *world) event(name string) map[string]any {
	w.t.Helper()
	for _, e := range w.events() {
		if e["event"] == name || e["type"] == name || e["kind"] == name {
			return e
		}
	}
	w.t.Fatalf("no %q event in events.jsonl: %v", name, w.events())
	return nil
}

// turnRequest returns the request answered with scripted turn i.
func (w *world) turnRequest(i int) fakemodel.Request {
	w.t.Helper()
	s := w.srv.Scripted()
	if i >= len(s) {
		w.t.Fatalf("the client made %d scripted requests, want more than %d\n%s", len(s), i, w.requestLog())
	}
	return s[i]
}

// toldModel reports whether any request the client sent to the model
// holds every one of texts.
func (w *world) toldModel(texts ...string) bool {
	for _, r := range w.srv.Requests() {
		if !slices.ContainsFunc(texts, func(s string) bool { return !hasText(r.Body, s) }) {
			return true
		}
	}
	return false
}

func (w *world) requestLog() string {
	var b strings.Builder
	for _, r := range w.srv.Requests() {
		fmt.Fprintf(&b, "  %s %s turn=%d (%d bytes)\n", r.Method, r.Path, r.Turn, len(r.Body))
	}
	return b.String()
}

// hasText reports whether any string in the JSON body contains s: tool
// results travel as JSON strings, escaped differently by each client.
func hasText(body []byte, s string) bool {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return bytes.Contains(body, []byte(s))
	}
	return walkStrings(v, func(x string) bool { return strings.Contains(x, s) })
}

func walkStrings(v any, f func(string) bool) bool {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		for _, x := range v {
			if walkStrings(x, f) {
				return true
			}
		}
	case map[string]any:
		for _, x := range v {
			if walkStrings(x, f) {
				return true
			}
		}
	}
	return false
}

// forEachClient runs a scenario for every client, in parallel: each
// scenario is mostly waiting on its client.
func forEachClient(t *testing.T, f func(t *testing.T, c client)) {
	forClients(t, nil, f)
}

// forClients is forEachClient over the clients named in only (nil: all):
// a scenario that speaks one client's own tool runs for that client
// alone, and the others show no subtest rather than an empty pass.
func forClients(t *testing.T, only []string, f func(t *testing.T, c client)) {
	for _, c := range clients {
		if only != nil && !slices.Contains(only, c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}
