package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// journaled lists the commits in the repository's commit journal made by
// session.
func journaled(t *testing.T, dir, session string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, layout.RuntimeDir, layout.JournalFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e checkpoint.JournalEntry
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		if e.Session == session {
			out = append(out, e.SHA)
		}
	}
	return out
}

// shimCommit runs git ARGS in dir as the session's git shim would and
// reports whether the shim ran git itself (to journal), and git's code.
func shimCommit(t *testing.T, dir string, args ...string) (code int, ran bool) {
	t.Helper()
	t.Chdir(dir)
	var stderr strings.Builder
	_, sub, inline := gitCommand(args)
	code, ran = commitJournaled(dir, args, sub, inline, gitfiles.RealGit(), &stderr)
	if stderr.Len() > 0 {
		t.Logf("shim: %s", stderr.String())
	}
	return code, ran
}

// A session's commit made by a git whose hooks are off (Gemini CLI's
// shell: core.hooksPath emptied through GIT_CONFIG_*; or -c on the command
// line) is journaled by the shim, and so is the merge commit of a `git
// merge`, which never runs post-commit - not the commits it merged in, nor
// a fast-forward. With the hooks on, or outside a session, the shim leaves
// git to itself.
func TestShimJournalsCommitsNoHookSaw(t *testing.T) {
	dir := repo(t)
	hook := "#!/bin/sh\n" + checkpoint.GitHookMarker + "\nexit 0\n"
	if err := os.WriteFile(filepath.Join(dir, ".git", "hooks", "post-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", name)
	}
	head := func() string { return git(t, dir, "rev-parse", "HEAD") }

	// Outside a session: git's own business.
	write("a.txt")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
	t.Setenv("GIT_CONFIG_VALUE_0", "")
	if _, ran := shimCommit(t, dir, "commit", "-qm", "a"); ran {
		t.Fatal("the shim ran git outside a session")
	}
	git(t, dir, "commit", "-qm", "a")

	t.Setenv(layout.SessionEnv, "s1")
	write("b.txt")
	if code, ran := shimCommit(t, dir, "commit", "-qm", "b"); !ran || code != 0 {
		t.Fatalf("hooks off through GIT_CONFIG_*: ran %v, exit %d", ran, code)
	}
	if got := journaled(t, dir, "s1"); len(got) != 1 || got[0] != head() {
		t.Fatalf("journal %v, want %s", got, head())
	}
	if os.Getenv("GIT_CONFIG_COUNT") != "1" {
		t.Fatal("the shim left the environment changed")
	}
	// A failing commit (nothing to commit) journals nothing, with git's code.
	if code, ran := shimCommit(t, dir, "commit", "-qm", "nothing"); !ran || code != 1 {
		t.Fatalf("an empty commit: ran %v, exit %d", ran, code)
	}
	os.Unsetenv("GIT_CONFIG_COUNT")

	// Hooks on: post-commit journals it, not the shim.
	write("c.txt")
	if _, ran := shimCommit(t, dir, "commit", "-qm", "c"); ran {
		t.Fatal("the shim ran a commit whose hooks run")
	}
	git(t, dir, "commit", "-qm", "c")
	// -c core.hooksPath on the command line.
	write("d.txt")
	if _, ran := shimCommit(t, dir, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "d"); !ran {
		t.Fatal("the shim did not journal a commit made with -c core.hooksPath")
	}
	if got := journaled(t, dir, "s1"); len(got) != 2 || got[1] != head() {
		t.Fatalf("journal %v, want %s last", got, head())
	}

	// A merge commit: journaled alone. A fast-forward: nothing.
	git(t, dir, "checkout", "-q", "-b", "side")
	write("e.txt")
	git(t, dir, "commit", "-qm", "e")
	side := head()
	git(t, dir, "checkout", "-q", "main")
	if _, ran := shimCommit(t, dir, "merge", "-q", "--ff-only", "side"); !ran {
		t.Fatal("the shim did not run the merge")
	}
	if got := journaled(t, dir, "s1"); len(got) != 2 {
		t.Fatalf("a fast-forward was journaled: %v", got)
	}
	git(t, dir, "reset", "-q", "--hard", "HEAD@{1}")
	write("f.txt")
	git(t, dir, "commit", "-qm", "f")
	if code, ran := shimCommit(t, dir, "merge", "-q", "--no-edit", "side"); !ran || code != 0 {
		t.Fatalf("merge: ran %v, exit %d", ran, code)
	}
	got := journaled(t, dir, "s1")
	if len(got) != 3 || got[2] != head() || strings.Contains(strings.Join(got, " "), side) {
		t.Fatalf("journal %v: want the merge commit %s last and not %s", got, head(), side)
	}
}
