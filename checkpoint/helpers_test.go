package checkpoint

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

// testRepo is a real git repository in a temp dir.
type testRepo struct {
	t   *testing.T
	dir string
	st  *State
}

func newRepo(t *testing.T) *testRepo {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
	t.Setenv(layout.SessionEnv, "")
	dir := t.TempDir()
	r := &testRepo{t: t, dir: dir}
	r.git("init", "-q", "-b", "main")
	r.write("README", "hello\n")
	r.write(".gitignore", "*.log\n")
	r.git("add", ".")
	r.git("commit", "-q", "-m", "init")
	st, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r.st = st
	return r
}

func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *testRepo) write(rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) read(rel string) string {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.dir, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return string(data)
}

func (r *testRepo) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(r.dir, rel))
	return err == nil
}

func (r *testRepo) commit(rel, content, msg string) string {
	r.t.Helper()
	r.write(rel, content)
	r.git("add", rel)
	r.git("commit", "-q", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// fingerprint captures the user-visible state: HEAD, the branch, the index,
// and every file in the working tree except wiggum's runtime state.
func (r *testRepo) fingerprint() string {
	r.t.Helper()
	var b strings.Builder
	b.WriteString(r.git("rev-parse", "HEAD") + "\n")
	b.WriteString(r.git("rev-parse", "--symbolic-full-name", "HEAD") + "\n")
	b.WriteString(r.git("ls-files", "-s") + "\n")
	filepath.Walk(r.dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r.dir, p)
		if fi.IsDir() {
			if rel == ".git" || rel == layout.RuntimeDir {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(rel, layout.LockFile) {
			return nil
		}
		data, _ := os.ReadFile(p)
		b.WriteString(rel + "\x00" + string(data) + "\n")
		return nil
	})
	return b.String()
}

// installJournalHook turns the journal on with a post-commit hook carrying
// wiggum's marker; the tests record commits by calling RecordCommit.
func (r *testRepo) installJournalHook() {
	r.t.Helper()
	hook := filepath.Join(r.st.Repo.HooksDir, "post-commit")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"+GitHookMarker+"\nexit 0\n"), 0o755); err != nil {
		r.t.Fatal(err)
	}
}

// sessionCommit commits as session tok and journals it.
func (r *testRepo) sessionCommit(tok, rel, content string) string {
	r.t.Helper()
	sha := r.commit(rel, content, "work on "+rel)
	r.t.Setenv(layout.SessionEnv, tok)
	if err := r.st.RecordCommit(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Setenv(layout.SessionEnv, "")
	return sha
}
