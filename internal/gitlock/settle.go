// Package gitlock clears what a killed wiggum's git processes leave in a
// repository: git processes that outlived it and the lock files of git
// processes that died without cleaning up. It is kept out of internal/git,
// whose closure the hook path loads (this one reads /proc through
// internal/proc, which links net).
package gitlock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// SettleOptions says how Settle treats what a killed wiggum's git
// processes left in a repository.
type SettleOptions struct {
	// Root is the repository's top level (wiggum's worktrees live under
	// it) and CommonDir its shared git directory.
	Root, CommonDir string
	// Exclusive: the caller holds the agent lock, so no wiggum works here
	// and any git at work is someone else's: Settle waits for it, up to
	// Wait, then fails naming it. Without it (a command that runs beside a
	// live run, such as worktree prune) a git at work is let be, and only
	// a dead wiggum's git is waited for.
	Exclusive bool
	// Wait bounds the wait for other gits (Exclusive); Grace is how long
	// a git a dead wiggum started may go on before it is killed.
	Wait, Grace time.Duration
	// Say tells the user what was done (a process killed, a lock removed).
	Say func(format string, args ...any)
}

// Settle clears what a killed wiggum's git processes left in a repository,
// so that the commands that follow - the next run's, prune's, the user's
// own git - do not fail on "Unable to create '...lock': File exists".
//
// A killed wiggum's git commands get SIGTERM at its death (Pdeathsig) and
// remove their locks on the way out, which can take a moment on a busy
// machine: Settle waits for them. One still running Grace later did not
// heed it - git 2.39 has been seen to spin in its own signal handler for
// good, holding refs/heads/main.lock - and nobody is waiting for its work:
// it is killed, and said so. A lock file (index.lock, a ref's .lock, in the
// shared git dir and every worktree's) while no git process works in the
// repository was left by a git that died without cleaning up (SIGKILL, a
// reboot) and is removed, and said so - only if it is still the same file
// when removed, so a lock a new git has since taken is never touched.
func Settle(ctx context.Context, o SettleOptions) error {
	start := time.Now()
	for {
		lock := lockFile(o.CommonDir)
		var seen fs.FileInfo
		if lock != "" {
			seen, _ = os.Lstat(lock) // before the look for gits at work
		}
		// A git that could not be looked at (another user's) may hold the
		// lock as well as one seen at work: a lock is never removed on a
		// guess.
		pids, unreadable, known := git.GitsWorkingIn(o.Root, o.CommonDir)
		var orphans, others []int
		for _, pid := range pids {
			if owner := git.Owner(pid); owner != 0 && owner != os.Getpid() && !layout.PIDAlive(owner) {
				orphans = append(orphans, pid)
			} else if lock != "" && git.MayHold(pid, lock) {
				// Only a git that may take the lock counts: one that never
				// does (a git log open in a pager, an editor's cat-file
				// --batch) would keep a stale lock for as long as it is
				// open, and a run waiting on it would be refused.
				others = append(others, pid)
			}
		}
		others = append(others, unreadable...)
		switch {
		case len(orphans) > 0 && time.Since(start) > o.Grace:
			for _, pid := range orphans {
				if err := killOrphan(pid, o); err != nil {
					return err
				}
			}
			continue
		case len(orphans) > 0:
			// Give them their moment to heed the SIGTERM.
		case lock == "":
			return nil
		case len(others) == 0 && known:
			removed, err := git.RemoveStale(lock, seen)
			if err != nil {
				return err
			}
			if removed {
				o.Say("removed %s, left by a git process that died without cleaning up", lock)
				continue
			}
		case !o.Exclusive:
			return nil // a live git's lock, or one it will clear
		case time.Since(start) > o.Wait:
			if len(others) == 0 {
				return fmt.Errorf("%s exists for more than %s and the processes that may hold it cannot be listed (/proc cannot be read); if no git runs in the repository, remove it, then run again", lock, o.Wait)
			}
			pid := others[0]
			return fmt.Errorf("%s exists for more than %s and git (pid %d%s) is working in the repository; run again when it is done", lock, o.Wait, pid, DescribeProcess(pid))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// killOrphan kills a git a dead wiggum started and waits (briefly) for it
// to be gone.
func killOrphan(pid int, o SettleOptions) error {
	what, owner := DescribeProcess(pid), git.Owner(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill git (pid %d%s), left running by a killed wiggum: %w", pid, what, err)
	}
	for i := 0; i < 100 && layout.PIDAlive(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	o.Say("killed git (pid %d%s): the killed wiggum (pid %d) started it, and it was still running %s after that wiggum's death", pid, what, owner, o.Grace)
	return nil
}

// DescribeProcess is ": COMMAND LINE, parent PPID" for a live pid, for an
// error that must let the user find the process; "" once it is gone.
func DescribeProcess(pid int) string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	out := ": " + strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
	if _, ppid, ok := layout.ProcStat(pid); ok {
		out += ", parent " + strconv.Itoa(ppid)
	}
	return out
}

// lockFile returns a git lock file under commonDir, or "".
func lockFile(commonDir string) string {
	found := ""
	_ = filepath.WalkDir(commonDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(commonDir, path); rel == "objects" || rel == "logs" || rel == "hooks" {
				return filepath.SkipDir
			}
			return nil
		}
		// wiggum's own flock files are not git's locks.
		if strings.HasSuffix(d.Name(), ".lock") && !strings.HasPrefix(d.Name(), "wiggum-") {
			found = path
		}
		return nil
	})
	return found
}
