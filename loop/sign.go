package loop

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// passedWork is an attempt that passed and whose commit git would not
// make for a reason of the repository's, not the agent's (SigningError,
// MessageRefusedError): the run stops with the work left uncommitted and
// the attempt's pass in the journal, and the next run, once that is
// mended, commits it without running the agent again. Story is "" when
// the reason was found before the first attempt.
type passedWork struct {
	Story string
	// Worktree: the parallel worker's worktree the work is in; Kept says
	// it is left there for the resume (otherwise its removal saved it
	// under refs/wiggum/backup/ and the story is done again).
	Worktree string
	Kept     bool
}

func (p *passedWork) passed() *passedWork { return p }

// uncommitted is an error of a passedWork.
type uncommitted interface {
	error
	passed() *passedWork
}

// stoppedUncommitted is the passedWork err stopped the run with, if any.
func stoppedUncommitted(err error) *passedWork {
	var u uncommitted
	if errors.As(err, &u) && u.passed().Story != "" {
		return u.passed()
	}
	return nil
}

// left says where the work is and what the next run does with it.
func (p *passedWork) left() string {
	left, then := "in the tree as it was", "commits that work with its tick (the agent is not run again)"
	switch {
	case p.Worktree != "" && p.Kept:
		left, then = "in its worktree "+p.Worktree, "commits that work and lands it (the agent is not run again)"
	case p.Worktree != "":
		left, then = "in the backup of its worktree (refs/wiggum/backup/)", "does the story again"
	}
	return fmt.Sprintf("Its work is not committed: it is left %s; once that is mended, run again: the run resumes, %s and goes on", left, then)
}

// SigningError is git failing to sign a commit the loop must make (the
// user has commit.gpgSign on): found before the first attempt, the run
// does not start; found at a story's commit (a key that left its agent,
// a passphrase cache that expired), the run stops as passedWork says.
type SigningError struct {
	passedWork
	Err error
}

func (e *SigningError) Error() string {
	why := signingWords(e.Err)
	how := "make signing work without a terminal - load the key into its agent (ssh-add for gpg.format ssh; for gpg, sign something once so gpg-agent holds the passphrase) - " +
		"or turn signing off for the run (GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=commit.gpgSign GIT_CONFIG_VALUE_0=false wiggum run ...)"
	if e.Story == "" {
		return fmt.Sprintf("run: git signs every commit here (commit.gpgSign), and signing failed with nobody at the terminal to type a passphrase: %s. "+
			"An unattended run must sign without asking: %s. Nothing changed", why, how)
	}
	return fmt.Sprintf("run: %s passed, but git could not sign its commit (commit.gpgSign): %s. To sign unattended, %s. %s", e.Story, why, how, e.left())
}

func (e *SigningError) Unwrap() error { return e.Err }

// signingWords is what the signing program said, on one line, without
// git's "error: " and "fatal: failed to write commit object".
func signingWords(err error) string {
	msg := err.Error()
	var ge *git.Error
	if errors.As(err, &ge) && strings.TrimSpace(ge.Stderr) != "" {
		msg = ge.Stderr
	}
	var keep []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimPrefix(strings.TrimSpace(l), "error: ")
		if l == "" || strings.Contains(l, "failed to write commit object") {
			continue
		}
		keep = append(keep, l)
	}
	if len(keep) == 0 {
		return strings.TrimSpace(msg)
	}
	return strings.Join(keep, " ")
}
