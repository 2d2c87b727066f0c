package hooks

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

// A parallel worker's worktree is git-locked, so git worktree remove and
// move leave it alone - unless given --force twice, which overrides git's
// lock. An agent's script (not read by the guard) could so remove another
// worker's live worktree, or its own, under the running attempt. As the
// agent's git, the shim refuses to remove or move a worktree whose lease
// a worker holds (git worktree prune skips a locked worktree by itself).

// keepLeased answers git worktree REST run in dir: the exit code of its
// refusal when REST removes or moves a worktree whose lease is held, or
// -1 to leave the command to git.
func keepLeased(dir string, rest []string, real string, stderr io.Writer) int {
	if len(rest) == 0 || (rest[0] != "remove" && rest[0] != "move") {
		return -1
	}
	target := ""
	for _, a := range rest[1:] {
		if !strings.HasPrefix(a, "-") || a == "-" {
			target = a
			break
		}
	}
	if target == "" {
		return -1
	}
	out, err := exec.Command(real, "-C", dir, "worktree", "list", "--porcelain", "-z").Output()
	if err != nil {
		return -1 // git says what is wrong
	}
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	suffix := "/" + strings.Trim(filepath.ToSlash(filepath.Clean(target)), "/")
	for _, field := range strings.Split(string(out), "\x00") {
		path, ok := strings.CutPrefix(field, "worktree ")
		if !ok || !(layout.SameDir(path, abs) || strings.HasSuffix(path, suffix)) {
			continue
		}
		if held, err := layout.At(path).Probe(); err == nil && held {
			fmt.Fprintf(stderr, "wiggum: git worktree %s %s refused: a wiggum worker holds that worktree's lease, and a leased worktree is never removed or moved; `wiggum worktree prune` removes the ones no worker holds once their run ends\n", rest[0], target)
			return 1
		}
	}
	return -1
}
