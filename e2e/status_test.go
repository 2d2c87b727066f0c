package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// treeState is every path under dir with its size and modification time.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = fmt.Sprint(fi.ModTime().Format(time.RFC3339Nano), " ", fi.Mode(), " ", fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wiggum status only reads: it wrote .git/info/exclude (wiggum's lines)
// and its lock beside it, and in a checkout its user cannot write - a
// teammate's, a read-only mount - it failed with exit 2, "permission
// denied", where watch and report worked.
func TestStatusWritesNothing(t *testing.T) {
	dir := newRepo(t)
	before := treeState(t, dir)
	if r := wiggum(t, dir, nil, "status"); r.code != 0 || !strings.Contains(r.stdout, "lock:") {
		t.Fatalf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := treeState(t, dir)
	for path, was := range before {
		if after[path] != was {
			t.Errorf("status changed %s", path)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok {
			t.Errorf("status made %s", path)
		}
	}

	// A checkout this user cannot write.
	ro := newRepo(t)
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("setpriv (util-linux) is needed to run status as another user")
			}
			t.Skip("setpriv not installed")
		}
		home := t.TempDir()
		writeFile(t, filepath.Join(home, ".gitconfig"), "[safe]\n\tdirectory = *\n")
		for _, d := range []string{home, filepath.Dir(home), ro, filepath.Dir(ro), filepath.Dir(wiggumBin), filepath.Dir(filepath.Dir(wiggumBin))} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		mustRun(t, ro, "chmod", "-R", "a+rX,go-w", ".")
		cmd = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "env", "HOME="+home, "PATH="+os.Getenv("PATH"), wiggumBin, "status")
	} else {
		mustRun(t, ro, "chmod", "-R", "a-w", ".")
		t.Cleanup(func() { _ = exec.Command("chmod", "-R", "u+w", ro).Run() })
		cmd = exec.Command(wiggumBin, "status")
	}
	cmd.Dir = ro
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "lock:") {
		t.Fatalf("status in a checkout its user cannot write: %v\n%s", err, out)
	}
}
