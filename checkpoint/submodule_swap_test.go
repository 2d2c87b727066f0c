package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// newUpstream makes a repository of its own with one commit of file, for
// a submodule to be added from.
func newUpstream(t *testing.T, file string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(file+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", file}, {"commit", "-q", "-m", file}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// TestRollbackSwappedSubmodules: an attempt removed a submodule (git rm)
// and added another (git submodule add), committed or not. The rollback
// puts the removed one's gitlink and .gitmodules entry back and checks it
// out again from its repository under .git/modules; the added one leaves
// the index and .gitmodules, its checkout is set aside and its repository
// kept. The tree is clean at the checkpoint, and each is said.
func TestRollbackSwappedSubmodules(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(map[bool]string{true: "committed", false: "uncommitted"}[commit], func(t *testing.T) {
			r := newRepo(t)
			r.addSubmodule()
			other := newUpstream(t, "other.txt")
			mustSave(t, r, "")
			at := r.git("rev-parse", "HEAD:vendor/lib")
			gitmodules := r.read(".gitmodules")
			r.git("rm", "-q", "vendor/lib")
			r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", other, "other")
			if commit {
				r.git("commit", "-q", "-m", "swap submodules")
			}
			if r.exists("vendor/lib/lib.txt") {
				t.Fatal("git rm left the checkout")
			}

			dry, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(dry.Submodules) != 2 || r.exists("vendor/lib/lib.txt") || !r.exists("other/other.txt") {
				t.Fatalf("dry run: %+v", dry.Submodules)
			}

			res, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true})
			if err != nil {
				t.Fatal(err)
			}
			if st := r.git("status", "--porcelain", "--ignore-submodules=none"); st != "" {
				t.Errorf("status after the rollback:\n%s", st)
			}
			if got := r.read(".gitmodules"); got != gitmodules {
				t.Errorf(".gitmodules: %q, want %q", got, gitmodules)
			}
			if got := r.git("ls-files", "-s", "vendor/lib", "other"); got != "160000 "+at+" 0\tvendor/lib" {
				t.Errorf("index: %q", got)
			}
			if r.read("vendor/lib/lib.txt") != "lib\n" || r.git("-C", "vendor/lib", "rev-parse", "HEAD") != at {
				t.Error("vendor/lib is not checked out again at the checkpoint's commit")
			}
			if r.exists("other") {
				t.Error("other's checkout is still there")
			}
			var back, gone *SubmoduleReturn
			for i, s := range res.Submodules {
				switch s.Path {
				case "vendor/lib":
					back = &res.Submodules[i]
				case "other":
					gone = &res.Submodules[i]
				}
			}
			if back == nil || !back.CheckedOut || back.Left != "" {
				t.Errorf("vendor/lib: %+v", res.Submodules)
			}
			if gone == nil || !gone.Removed || gone.Left != "" {
				t.Fatalf("other: %+v", res.Submodules)
			}
			if _, err := os.Stat(filepath.Join(gone.Aside, "other.txt")); err != nil {
				t.Errorf("the set-aside checkout: %v", err)
			}
			for _, args := range [][]string{{"--git-dir", gone.Repository, "status", "--porcelain"}, {"-C", gone.Aside, "status", "--porcelain"}} {
				if out, err := exec.Command("git", args...).CombinedOutput(); err != nil || len(out) != 0 {
					t.Errorf("git %q: %v %s", args, err, out)
				}
			}
			t.Log(res.Notes())
		})
	}
}

// TestRollbackReturnsMovedNestedSubmodule: an attempt committed in a
// submodule of a submodule and recorded that in the submodule around it.
// The rollback returns the outer one to the checkpoint's commit and then
// the inner one to the commit that records - which the status read before
// the outer one moved did not name.
func TestRollbackReturnsMovedNestedSubmodule(t *testing.T) {
	r := newRepo(t)
	nestedSubmodules(t, r, newUpstream(t, "d.txt"))
	mustSave(t, r, "")
	inner := r.git("-C", "vendor/mid/inner", "rev-parse", "HEAD")
	r.write("vendor/mid/inner/d.txt", "moved deep inside\n")
	subGit(t, filepath.Join(r.dir, "vendor/mid/inner"), "commit", "-q", "-am", "i2")
	subGit(t, filepath.Join(r.dir, "vendor/mid"), "commit", "-q", "-am", "bump inner")

	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.git("-C", "vendor/mid/inner", "rev-parse", "HEAD"); got != inner {
		t.Errorf("vendor/mid/inner at %s, want %s (%+v)", got, inner, res.Submodules)
	}
	if st := r.git("status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("status after the rollback:\n%s", st)
	}
	if len(res.Submodules) != 2 || res.Submodules[1].Path != "vendor/mid/inner" || res.Submodules[1].Backup == "" {
		t.Errorf("submodules: %+v", res.Submodules)
	}
}
