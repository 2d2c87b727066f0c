package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// protectHook is the pre-commit framework's hook (pre-commit-hooks') that
// refuses every commit on the branches it protects - main and master
// unless told others - whatever is staged.
const protectHook = "no-commit-to-branch"

// BranchRefusedError is the repository's pre-commit hook refusing every
// commit on the run's branch (protectHook): no story's work could ever be
// committed there, and every attempt - an agent's whole session, paid for
// - was rolled back as a failure, story after story. Found before the
// first attempt, the run does not start (Story ""); found at a story's
// commit, the run stops after that attempt's rollback (its work saved in
// Backup).
type BranchRefusedError struct {
	Story, Backup string
	Branch        string
	Output        string // what the hook said
}

func (e *BranchRefusedError) Error() string {
	said := oneLine(e.Output, 500)
	how := fmt.Sprintf("run wiggum on a branch of its own - wiggum run --branch NAME (or branchName in prd.json) makes it from %s, and its stories land there for you to merge", e.Branch)
	if e.Story == "" {
		return fmt.Sprintf("run: your pre-commit hook %s refuses every commit on %s, so no story could be committed here: %s. To go on, %s; nothing changed", protectHook, e.Branch, said, how)
	}
	return fmt.Sprintf("run: stopped: %s passed, but your pre-commit hook %s refuses every commit on %s, as it would every story's: %s. Its work is saved in %s (wiggum recover). To go on, %s", e.Story, protectHook, e.Branch, said, e.Backup, how)
}

// oneLine joins text's non-empty lines with " | ", keeping its last max
// bytes.
func oneLine(text string, max int) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " | ")
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}

// protectedBranch asks the pre-commit framework, before the first attempt,
// whether its protectHook refuses commits on the branch checked out in
// repo: only when the repository's .pre-commit-config.yaml names that
// hook, git runs pre-commit's hook, and pre-commit is installed. It runs
// that one hook (pre-commit run HOOK), which looks at nothing staged. The
// caller probes a clean tree only (pre-commit would stash uncommitted
// changes meanwhile); otherwise the refusal is found at the first
// commit. nil when the hook lets commits through, or cannot be asked.
func protectedBranch(ctx context.Context, repo *git.Repo, branch string) error {
	cfg, err := statefile.ReadFile(filepath.Join(repo.Root, ".pre-commit-config.yaml"))
	if err != nil || !bytes.Contains(cfg, []byte(protectHook)) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(repo.HooksDir, "pre-commit")); err != nil {
		return nil
	}
	exe, err := exec.LookPath("pre-commit")
	if err != nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, exe, "run", protectHook)
	cmd.Dir = repo.Root
	cmd.Env = git.UnattendedEnv(git.WithoutRepoEnv(os.Environ()))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) || !bytes.Contains(out, []byte("hook id: "+protectHook)) {
		return nil
	}
	return &BranchRefusedError{Branch: branch, Output: string(out)}
}

// branchRefusedIn reports whether a failed commit's output is
// protectHook's refusal.
func branchRefusedIn(output string) bool {
	return strings.Contains(output, "hook id: "+protectHook)
}
