package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cleanHistory makes the agent's commits again without the packages and
// large files they added, keeps what base tracked and what is not only
// the agent's, and leaves a branch whose commits hold none of it alone.
func TestCleanHistory(t *testing.T) {
	ctx := context.Background()
	write := func(t *testing.T, dir, p string, size int) {
		t.Helper()
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(strings.Repeat("x", size)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(t *testing.T, dir, msg string) {
		t.Helper()
		gitT(t, dir, "add", "-A")
		gitT(t, dir, "commit", "-q", "-m", msg)
	}
	t.Run("rewritten", func(t *testing.T) {
		st, _ := newRepo(t, 1)
		dir := st.Repo.Root
		write(t, dir, "vendor/node_modules/kept.js", 1) // the project's, at base
		commit(t, dir, "vendored")
		base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
		write(t, dir, "a.txt", 1)
		commit(t, dir, "agent: a") // nothing unwanted: kept as it is
		a := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
		write(t, dir, "node_modules/x/i.js", 1)
		write(t, dir, "vendor/node_modules/more.js", 1)
		write(t, dir, "big.bin", 2000)
		write(t, dir, "b.txt", 1)
		commit(t, dir, "agent: b")
		write(t, dir, "node_modules/y/i.js", 1)
		commit(t, dir, "agent: only packages")
		write(t, dir, "a.txt", 2)
		commit(t, dir, "agent: a changed") // adds nothing
		write(t, dir, "c.txt", 1)
		commit(t, dir, "agent: c")
		old := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
		cl, err := cleanHistory(ctx, st, base, "refs/heads/"+strings.TrimSpace(gitT(t, dir, "branch", "--show-current")), 1000)
		if err != nil || cl.why != "" {
			t.Fatalf("%v %q", err, cl.why)
		}
		if got := strings.Join(cl.paths(), " "); got != "node_modules/ big.bin" {
			t.Fatalf("took out %q", got)
		}
		if cl.rewritten != 4 || cl.dropped != 1 {
			t.Fatalf("rewritten %d, dropped %d", cl.rewritten, cl.dropped)
		}
		if got := gitT(t, dir, "rev-parse", cl.backup); strings.TrimSpace(got) != old {
			t.Fatalf("backup %s is %s, not %s", cl.backup, got, old)
		}
		if got := gitT(t, dir, "log", "--format=%s", base+"..HEAD"); got != "agent: c\nagent: a changed\nagent: b\nagent: a\n" {
			t.Fatalf("commits:\n%s", got)
		}
		if got := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD~3")); got != a {
			t.Fatalf("the commit before the first that added them was made again: %s, not %s", got, a)
		}
		files := gitT(t, dir, "log", "--format=", "--name-only", base+"..HEAD")
		for _, p := range []string{"a.txt", "b.txt", "c.txt", "vendor/node_modules/more.js"} {
			if !strings.Contains(files, p+"\n") {
				t.Errorf("%s left the history:\n%s", p, files)
			}
		}
		if strings.Contains(files, "node_modules/x") || strings.Contains(files, "node_modules/y") || strings.Contains(files, "big.bin") {
			t.Errorf("still in the history:\n%s", files)
		}
		// Done: nothing more to take out.
		if cl, err := cleanHistory(ctx, st, base, "refs/heads/"+strings.TrimSpace(gitT(t, dir, "branch", "--show-current")), 1000); err != nil || len(cl.paths()) != 0 {
			t.Fatalf("again: %+v %v", cl, err)
		}
	})
	t.Run("after a pull", func(t *testing.T) {
		st, _ := newRepo(t, 1)
		dir := st.Repo.Root
		branch := strings.TrimSpace(gitT(t, dir, "branch", "--show-current"))
		base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
		// What others pushed: a remote-tracking ref holds it.
		gitT(t, dir, "checkout", "-q", "-b", "up", base)
		write(t, dir, "web/node_modules/u.js", 1)
		write(t, dir, "up.bin", 2000)
		commit(t, dir, "upstream")
		gitT(t, dir, "update-ref", "refs/remotes/origin/main", "up")
		gitT(t, dir, "checkout", "-q", branch)
		gitT(t, dir, "branch", "-q", "-D", "up")
		write(t, dir, "a.txt", 1)
		commit(t, dir, "agent: a")
		gitT(t, dir, "merge", "-q", "--no-edit", "origin/main")
		merge := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
		write(t, dir, "node_modules/x.js", 1)
		write(t, dir, "mine.bin", 2000)
		write(t, dir, "c.txt", 1)
		commit(t, dir, "agent: c")
		// The story's branch as a shared run's claim published it, and
		// a fetch brought back: the attempt's own all the same.
		gitT(t, dir, "update-ref", "refs/remotes/origin/wiggum/US-1", "HEAD")
		cl, err := cleanHistory(ctx, st, base, "refs/heads/"+branch, 1000)
		if err != nil || cl.why != "" || cl.backup == "" {
			t.Fatalf("%+v %v", cl, err)
		}
		if got := strings.Join(cl.paths(), " "); got != "node_modules/ mine.bin" {
			t.Fatalf("took out %q", got)
		}
		if got := strings.Join(cl.pulledPaths, " "); got != "web/node_modules up.bin" {
			t.Fatalf("pulled %q (%v)", got, cl.pulled)
		}
		if got := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD~1")); got != merge || cl.rewritten != 1 {
			t.Fatalf("made again on %s, %d commit(s); want on the merge %s", got, cl.rewritten, merge)
		}
		files := gitT(t, dir, "ls-tree", "-r", "--name-only", "HEAD")
		for p, want := range map[string]bool{"web/node_modules/u.js": true, "up.bin": true, "c.txt": true, "a.txt": true, "node_modules/x.js": false, "mine.bin": false} {
			if strings.Contains(files, p+"\n") != want {
				t.Errorf("%s in HEAD: %v, want %v\n%s", p, !want, want, files)
			}
		}
	})
	t.Run("not only the agent's", func(t *testing.T) {
		for _, c := range []struct{ name, want string }{{"merge", "is a merge"}, {"tag", "refs/tags/v1 holds them too"}} {
			st, _ := newRepo(t, 1)
			dir := st.Repo.Root
			branch := "refs/heads/" + strings.TrimSpace(gitT(t, dir, "branch", "--show-current"))
			base := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
			write(t, dir, "node_modules/x/i.js", 1)
			commit(t, dir, "agent: packages")
			if c.name == "merge" {
				gitT(t, dir, "checkout", "-q", "-b", "side", base)
				write(t, dir, "side.txt", 1)
				commit(t, dir, "side")
				gitT(t, dir, "checkout", "-q", strings.TrimPrefix(branch, "refs/heads/"))
				gitT(t, dir, "merge", "-q", "--no-edit", "side")
				gitT(t, dir, "branch", "-q", "-D", "side") // no ref holds it but the merge
			} else {
				gitT(t, dir, "tag", "v1")
			}
			head := gitT(t, dir, "rev-parse", "HEAD")
			cl, err := cleanHistory(ctx, st, base, branch, 0)
			if err != nil || !strings.Contains(cl.why, c.want) || cl.backup != "" {
				t.Fatalf("%s: %+v %v", c.name, cl, err)
			}
			if now := gitT(t, dir, "rev-parse", "HEAD"); now != head {
				t.Fatalf("%s: HEAD moved", c.name)
			}
		}
	})
}
