package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRollbackWritesFilesAsGitDoes: the same rollback run twice - once
// where wiggum writes the files itself (nothing converts them), once where
// git's checkout-index must (an attributes file that changes nothing) -
// leaves the same working tree, modes and index: a file that became a
// directory and the reverse, a file where a directory is needed, an
// executable bit, new directories, an ignored file in the way.
func TestRollbackWritesFilesAsGitDoes(t *testing.T) {
	results := map[bool]string{}
	for _, verbatim := range []bool{true, false} {
		r := newRepo(t)
		r.write("k/file-then-dir", "a file\n")
		r.write("k/dir-then-file/x.txt", "x\n")
		r.write("k/run.sh", "#!/bin/sh\n")
		r.write("k/deep/er/f.txt", "deep\n")
		r.write("k/ignored-in-way", "tracked\n")
		os.Chmod(filepath.Join(r.dir, "k/run.sh"), 0o755)
		r.git("add", "-A")
		r.git("commit", "-q", "-m", "kinds")
		if !verbatim {
			r.write(".git/info/attributes", "no-such-file -text\n")
		}
		r.write("k/run.sh", "#!/bin/sh\necho checkpoint\n") // uncommitted at checkpoint time
		mustSave(t, r, "")
		want := r.fingerprint()

		// The agent: every kind of change, one commit and some more.
		os.Remove(filepath.Join(r.dir, "k/file-then-dir"))
		r.write("k/file-then-dir/inside.txt", "now a directory\n")
		os.RemoveAll(filepath.Join(r.dir, "k/dir-then-file"))
		r.write("k/dir-then-file", "now a file\n")
		r.git("add", "-A")
		r.git("commit", "-q", "-m", "agent")
		os.Chmod(filepath.Join(r.dir, "k/run.sh"), 0o644)
		r.write("k/run.sh", "changed by the agent\n")
		os.RemoveAll(filepath.Join(r.dir, "k/deep"))
		r.write("k/deep", "a file where a directory was\n")
		r.git("rm", "-q", "--cached", "k/ignored-in-way")
		r.write(".gitignore", "*.log\nk/ignored-in-way\n")
		os.Remove(filepath.Join(r.dir, "k/ignored-in-way"))
		os.Mkdir(filepath.Join(r.dir, "k/ignored-in-way"), 0o755)
		r.write("k/ignored-in-way/junk", "ignored\n")

		paths := []string{"k/run.sh", "k/deep/er/f.txt", "k/file-then-dir", "k/dir-then-file/x.txt"}
		if got := r.st.Repo.Verbatim(paths); got != verbatim {
			t.Fatalf("Verbatim = %v, want %v", got, verbatim)
		}
		if _, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true}); err != nil {
			t.Fatal(err)
		}
		if got := r.fingerprint(); got != want {
			t.Fatalf("verbatim %v: not back at the checkpoint:\nwant\n%s\ngot\n%s", verbatim, want, got)
		}
		var modes strings.Builder
		filepath.Walk(filepath.Join(r.dir, "k"), func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				rel, _ := filepath.Rel(r.dir, p)
				fmt.Fprintf(&modes, "%s %v\n", rel, fi.Mode())
			}
			return nil
		})
		results[verbatim] = modes.String() + r.git("status", "--porcelain", "--untracked-files=all")
	}
	if results[true] != results[false] {
		t.Fatalf("wiggum's writes and checkout-index's differ:\nwiggum:\n%s\ngit:\n%s", results[true], results[false])
	}
	if !strings.Contains(results[true], "k/run.sh -rwxr-xr-x") {
		t.Fatalf("the executable bit is lost:\n%s", results[true])
	}
}

// TestRollbackLargeFilesGoThroughGit: files past the in-process limits are
// hashed and written by git, and come back byte for byte.
func TestRollbackLargeFilesGoThroughGit(t *testing.T) {
	r := newRepo(t)
	big := strings.Repeat("0123456789abcdef", (inProcessCheckoutLimit+1)/16+1)
	r.write("big.bin", big)
	r.git("add", "big.bin")
	r.git("commit", "-q", "-m", "big")
	r.write("big.bin", big+"dirty at the checkpoint\n")
	mustSave(t, r, "")
	want := r.fingerprint()
	r.write("big.bin", "the agent shrank it\n")
	r.write("new-big.bin", big)
	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.fingerprint(); got != want {
		t.Fatal("the large file did not come back")
	}
	if got := r.git("cat-file", "-s", res.BackupRef+":new-big.bin"); got != fmt.Sprint(len(big)) {
		t.Fatalf("the backup's copy of the agent's large file has %s bytes, want %d", got, len(big))
	}
}
