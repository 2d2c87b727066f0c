package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wiggum status only reads: it wrote .git/info/exclude (wiggum's lines)
// and its lock beside it, and in a checkout its user cannot write - a
// teammate's, a read-only mount - it failed with exit 2, "permission
// denied", where watch and report worked.
func TestStatusWritesNothing(t *testing.T) {
	dir := newRepo(t)
	before := snapshot(t, dir)
	if r := wiggum(t, dir, nil, "status"); r.code != 0 || !strings.Contains(r.stdout, "lock:") {
		t.Fatalf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("status changed the repository:\n%s", diffLines(before, after))
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
