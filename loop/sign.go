package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
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

// TickError is a story that landed - its branch merged into the target -
// and whose tick git would not commit: a pre-commit hook that refuses the
// plan (a markdown linter), signing that stopped working between the
// merge and the tick. The run stops with the tick left in the plan,
// uncommitted, and the landing in the journal; the next run - once that
// is mended, or the plan committed by hand - commits the tick and goes
// on, and no agent does the story again. Before, the run ended, and the
// next one refused the ticked plan as the person's uncommitted change
// (exit 2), whose "commit or stash them" lost the tick to a stash and
// had the landed story done again.
type TickError struct {
	passedWork
	// Commit is the landing's commit on the target; Plan the plan's path.
	Commit, Plan string
	// Signing: git signs commits and cannot now.
	Signing bool
	Err     error
}

func (e *TickError) Error() string {
	why := "git said: " + oneLine(signingWords(e.Err), 1000)
	if e.Signing {
		why = "signing failed (commit.gpgSign): " + signingWords(e.Err) + "; load the key into its agent, or turn signing off for the run"
	}
	landed := "landed"
	if len(e.Commit) >= 12 {
		landed += " (" + e.Commit[:12] + ")"
	}
	return fmt.Sprintf("run: %s %s, but git would not commit its tick in %s: %s. The plan is left ticked, uncommitted, and the landing is in the run journal. "+
		"Once that is mended (or the plan committed by you), run again: the run resumes, commits the tick - no agent does %s again - and goes on", e.Story, landed, e.Plan, why, e.Story)
}

func (e *TickError) Unwrap() error { return e.Err }

// tickRefused is the TickError of story, landed at commit, whose tick's
// commit failed with err.
func (r *run) tickRefused(ctx context.Context, story *plan.Story, commit string, err error) error {
	e := &TickError{passedWork: passedWork{Story: story.ID}, Commit: commit, Plan: r.planRel, Err: err}
	if r.st.Repo.Sign {
		bctx, cancel := r.bounded(context.WithoutCancel(ctx))
		e.Signing = r.st.Repo.SignProbe(bctx) != nil
		cancel()
	}
	r.event("tick_uncommitted", map[string]any{"story": story.ID, "commit": commit, "error": signingWords(err)})
	return e
}
