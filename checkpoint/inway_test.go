package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A rollback that writes a checkpoint's file (or symbolic link) where the
// attempt left a directory deleted that directory recursively: a git
// repository of its own in it (its commits) and ignored files in it were
// lost, in no backup. Such a directory is moved whole out of the tree
// first, by a plain rollback and by the loop's (SetAsideRepos), whose
// set-aside of new repositories ran only after the directory was gone.
func TestRollbackSetsAsideDirectoryInTheWay(t *testing.T) {
	for _, loop := range []bool{false, true} {
		t.Run(map[bool]string{false: "rollback", true: "loop"}[loop], func(t *testing.T) {
			r := newRepo(t)
			r.write("vendor", "vendored\n")
			r.write("cache", "data\n")
			r.write("plain", "plain\n")
			if err := os.Symlink("../shared/lib", filepath.Join(r.dir, "lib")); err != nil {
				t.Fatal(err)
			}
			r.git("add", "-A")
			r.git("commit", "-q", "-m", "files")
			mustSave(t, r, "")

			for _, p := range []string{"vendor", "cache", "plain", "lib"} {
				if err := os.Remove(filepath.Join(r.dir, p)); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range []string{"vendor", "lib"} {
				r.write(p+"/p.txt", "precious "+p+"\n")
				r.git("-C", p, "init", "-q")
				r.git("-C", p, "add", "p.txt")
				r.git("-C", p, "commit", "-q", "-m", "local work in "+p)
			}
			r.write("cache/model.log", "weights\n") // ignored
			r.write("plain/new.txt", "untracked, in the backup\n")

			res, err := r.st.Rollback(ctx, RollbackOptions{SetAsideRepos: loop})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.read("vendor") + r.read("cache") + r.read("plain"); got != "vendored\ndata\nplain\n" {
				t.Fatalf("files not returned: %q", got)
			}
			if l, err := os.Readlink(filepath.Join(r.dir, "lib")); err != nil || l != "../shared/lib" {
				t.Fatalf("lib: %q %v", l, err)
			}
			aside := map[string]string{}
			for _, d := range res.InTheWay {
				aside[d.Path] = d.Aside
			}
			if len(aside) != 3 || aside["plain"] != "" {
				t.Fatalf("set aside %+v, want vendor, lib and cache (plain's files are in the backup)", res.InTheWay)
			}
			for _, p := range []string{"vendor", "lib"} {
				if !strings.HasPrefix(aside[p], filepath.Join(r.st.Repo.CommonDir, InTheWayAside)) {
					t.Fatalf("%s set aside at %q", p, aside[p])
				}
				out, err := exec.Command("git", "-C", aside[p], "log", "--format=%s").CombinedOutput()
				if err != nil || strings.TrimSpace(string(out)) != "local work in "+p {
					t.Fatalf("%s's history: %s %v", p, out, err)
				}
			}
			if data, err := os.ReadFile(filepath.Join(aside["cache"], "model.log")); err != nil || string(data) != "weights\n" {
				t.Fatalf("the ignored file: %q %v", data, err)
			}
			if len(res.Repositories) > 0 || len(res.SetAside) > 0 {
				t.Fatalf("repositories %v, set aside %+v: they went whole with their directories", res.Repositories, res.SetAside)
			}
			notes := strings.Join(res.Notes(), "\n")
			if !strings.Contains(notes, "vendor/ was where the checkpoint has a file and held a git repository of its own") || !strings.Contains(notes, aside["vendor"]) {
				t.Fatalf("notes do not say it:\n%s", notes)
			}
			if got := r.git("show", res.BackupRef+":plain/new.txt"); got != "untracked, in the backup" {
				t.Fatalf("plain/new.txt in the backup: %q", got)
			}
			if s := r.git("status", "--porcelain"); s != "" {
				t.Fatalf("tree not at the checkpoint:\n%s", s)
			}
		})
	}
}

// A rollback removed the person's empty directories that existed at the
// checkpoint (an upload directory, mode 700; data/cache/) once the
// attempt's files in them were removed. Only the directories the attempt
// made go.
func TestRollbackKeepsEmptyDirectories(t *testing.T) {
	r := newRepo(t)
	for _, d := range []string{"uploads", "data/cache"} {
		if err := os.MkdirAll(filepath.Join(r.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(r.dir, "uploads"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustSave(t, r, "")
	time.Sleep(50 * time.Millisecond) // past the file system clock's tick
	r.write("uploads/new.txt", "x\n")
	r.write("data/cache/z.txt", "y\n")
	r.write("made/deep/n.txt", "z\n")
	r.commit("data/cache/c.txt", "committed\n", "attempt")
	if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"uploads/new.txt", "data/cache/z.txt", "data/cache/c.txt", "made"} {
		if r.exists(f) {
			t.Fatalf("%s left", f)
		}
	}
	fi, err := os.Stat(filepath.Join(r.dir, "uploads"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("uploads/: %v %v, want it kept with mode 700", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(r.dir, "data/cache")); err != nil || !fi.IsDir() {
		t.Fatalf("data/cache/: %v", err)
	}
}
