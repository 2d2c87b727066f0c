package checkpoint

import (
	"crypto/sha1"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzEditIndex: an index file of any bytes - torn, hostile, or written by
// a git this code has never seen - makes editIndexData decline or write an
// index git reads; it never panics. The trailer is zeroed (index.skipHash),
// so the checksum does not turn every mutation away before the parser.
func FuzzEditIndex(f *testing.F) {
	dir := f.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		if out, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	for _, p := range []string{"a/one", "a/b/two", "c", strings.Repeat("long/", 20) + "name"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	git("add", "-A")
	git("write-tree")
	v2, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		f.Fatal(err)
	}
	git("update-index", "--index-version", "3", "--skip-worktree", "c")
	v3, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v2)
	f.Add(v3)
	f.Add(v2[:len(v2)/2])
	blob := strings.Repeat("e", 40)
	changes := []treeChange{{path: "a/b/two", mode: "100644", oid: blob}, {path: "c"}, {path: "a", mode: "100755", oid: blob}, {path: "new/x", mode: "120000", oid: blob}}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = append([]byte(nil), data...)
		if len(data) >= sha1.Size {
			clear(data[len(data)-sha1.Size:])
		}
		out, err := editIndexData(data, 0, changes)
		if err != nil {
			return
		}
		if len(out) < 12+sha1.Size || string(out[:4]) != "DIRC" {
			t.Fatalf("an edit wrote %d bytes that are no index", len(out))
		}
	})
}
