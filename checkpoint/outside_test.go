package checkpoint

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An index entry named outside the working tree or inside .git (written
// by hand: git refuses to make one), such as an agent's planted
// sub/../../outside, was read back by git status as it is, and taken as a
// path: the checkpoint read the file it names into its snapshot, and the
// rollback wrote the checkpoint's content there - a file outside the tree,
// outside the agent's sandbox. Now status refuses such a name: the
// checkpoint and the rollback stop with a clear error, nothing read or
// written.
func TestIndexEntryNamedOutsideTheTree(t *testing.T) {
	for _, name := range []string{"sub/../../OUTSIDE", ".git/hooks/post-checkout", "a/./b"} {
		setup := func(t *testing.T) (r *testRepo, outside, rel string) {
			r = newRepo(t)
			outside = filepath.Join(filepath.Dir(r.dir), "outside-"+filepath.Base(r.dir))
			if err := os.WriteFile(outside, []byte("not the repository's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r.write("sub/x", "x\n")
			return r, outside, strings.ReplaceAll(name, "OUTSIDE", filepath.Base(outside))
		}
		untouched := func(t *testing.T, outside, want string) {
			t.Helper()
			if got, err := os.ReadFile(outside); err != nil || string(got) != want {
				t.Fatalf("the file outside the tree: %q, %v", got, err)
			}
		}
		t.Run(name+"/before the checkpoint", func(t *testing.T) {
			r, outside, rel := setup(t)
			plantIndexEntry(t, r, rel)
			_, err := r.st.Save(ctx, "", SaveOptions{})
			if err == nil {
				// What the previous code did next: the rollback wrote the
				// checkpoint's content to the file outside.
				_ = os.WriteFile(outside, []byte("changed since\n"), 0o644)
				r.write("README", "the attempt's\n")
				_, _ = r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
				untouched(t, outside, "changed since\n")
				t.Fatal("the checkpoint took an index naming a path outside the tree")
			}
			if !strings.Contains(err.Error(), "not a path in the working tree") {
				t.Fatalf("checkpoint: %v", err)
			}
			untouched(t, outside, "not the repository's\n")
		})
		t.Run(name+"/by the attempt", func(t *testing.T) {
			r, outside, rel := setup(t)
			mustSave(t, r, "")
			r.write("README", "the attempt's\n")
			plantIndexEntry(t, r, rel)
			before := r.git("rev-parse", "HEAD")
			_, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
			if err == nil || !strings.Contains(err.Error(), "not a path in the working tree") {
				t.Fatalf("rollback: %v", err)
			}
			untouched(t, outside, "not the repository's\n")
			if r.read("README") != "the attempt's\n" || r.git("rev-parse", "HEAD") != before {
				t.Error("the refused rollback changed the tree")
			}
		})
	}
}

// plantIndexEntry adds an entry named rel (any name) to r's index, as a
// program writing the index file itself would.
func plantIndexEntry(t *testing.T, r *testRepo, rel string, oid ...string) {
	t.Helper()
	if len(oid) == 0 {
		oid = []string{r.git("hash-object", "-w", "README")}
	}
	index := filepath.Join(r.dir, ".git", "index")
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	out, err := editIndexData(data, 0, []treeChange{{path: rel, mode: "100644", oid: oid[0]}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(out[:len(out)-20])
	copy(out[len(out)-20:], sum[:])
	if err := os.WriteFile(index, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A commit whose tree holds an entry named "..", "." or ".git" (made by
// hand with hash-object --literally and commit-tree: git never writes one,
// and fsck and checkout refuse it), committed by the attempt with an index
// to match, so git status has nothing to say: the rollback's comparison of
// trees took "../outside" for a path the checkpoint does not have and
// removed that file, outside the tree. Now the rollback stops with a clear
// error, the file where it was.
func TestCommittedTreeNamingOutsideTheTree(t *testing.T) {
	for _, name := range []string{"..", ".git", "."} {
		t.Run(name, func(t *testing.T) {
			r := newRepo(t)
			outside := filepath.Join(filepath.Dir(r.dir), "outside-"+filepath.Base(r.dir))
			if err := os.WriteFile(outside, []byte("not the repository's\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			mustSave(t, r, "")
			readme := r.git("hash-object", "-w", "README")
			ignore := r.git("hash-object", "-w", ".gitignore")
			blob := r.git("hash-object", "-w", outside)
			sub := literalTree(t, r, "100644 "+filepath.Base(outside), blob)
			// In git's order (a tree's name sorts as if it ended in "/").
			root := literalTree(t, r, "40000 "+name, sub, "100644 .gitignore", ignore, "100644 README", readme)
			commit := r.git("commit-tree", root, "-p", "HEAD", "-m", "the attempt's")
			r.git("update-ref", "HEAD", commit)
			plantIndexEntry(t, r, name+"/"+filepath.Base(outside), blob)
			if name == ".." { // the case where git status has nothing to say
				if st := r.git("status", "--porcelain"); st != "" {
					t.Fatalf("git status is not clean, the case is not made:\n%s", st)
				}
			}

			_, err := r.st.Rollback(ctx, RollbackOptions{Reason: "tests failed"})
			if err == nil || !strings.Contains(err.Error(), "never writes") {
				t.Errorf("rollback: %v", err)
			}
			if got, err := os.ReadFile(outside); err != nil || string(got) != "not the repository's\n" {
				t.Fatalf("the file outside the tree: %q, %v", got, err)
			}
		})
	}
}

// literalTree writes a tree object of the entries given as pairs ("mode
// name", hex id), in that order, without git's checks.
func literalTree(t *testing.T, r *testRepo, pairs ...string) string {
	t.Helper()
	var b []byte
	for i := 0; i < len(pairs); i += 2 {
		id, err := hex.DecodeString(pairs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(append(b, pairs[i]...), 0), id...)
	}
	cmd := exec.Command("git", "hash-object", "-t", "tree", "--literally", "-w", "--stdin")
	cmd.Dir = r.dir
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
