package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/checkpointentry"
)

// CheckpointCmd is `wiggum checkpoint`.
type CheckpointCmd struct {
	AllowDetached bool `help:"Allow a checkpoint on a detached HEAD."`
	JSON          bool `name:"json" help:"Print the checkpoint as JSON."`
}

// Help is shown by `wiggum checkpoint --help`.
func (c *CheckpointCmd) Help() string {
	return `Records HEAD, the branch, the session and a snapshot of uncommitted files as the
point 'wiggum rollback' returns to: tracked and untracked files (not ignored ones),
and tracked files hidden from git status with 'git update-index --skip-worktree' or
'--assume-unchanged'. Inside a session (WIGGUM_SESSION matches the lock
holder's) it acts as part of it; otherwise it takes the agent lock itself and exits 3
if someone else holds it. Refuses (exit 2) on a repository with no commits, a
detached HEAD (unless --allow-detached), or a merge/rebase in progress.

  wiggum checkpoint
  wiggum lock -- sh -c 'wiggum checkpoint && my-agent && ./test.sh || wiggum rollback'`
}

// Run records the checkpoint.
func (c *CheckpointCmd) Run(ctx context.Context, g *Globals) error {
	cmd := checkpointentry.Command{Name: "checkpoint", AllowDetached: c.AllowDetached, JSON: c.JSON}
	return cmd.Run(ctx, g.WorkDir(), g.stdout)
}

// RollbackCmd is `wiggum rollback`.
type RollbackCmd struct {
	DryRun         bool   `help:"Show what would be discarded; change nothing."`
	Reason         string `help:"Why, recorded in the backup commit." default:"${rollback_reason}"`
	DiscardForeign bool   `name:"discard-foreign" help:"Discard (after saving them in the backup) commits that cannot be proven this session's own."`
	JSON           bool   `name:"json" help:"Print the result as JSON: {checkpoint, backup_ref, commits, files, removed, nothing_to_do, dry_run, ...}; refused (exit 4): {refused, reason, dry_run}."`
}

// Help is shown by `wiggum rollback --help`.
func (c *RollbackCmd) Help() string {
	return `Returns HEAD and the working tree to the checkpoint, but only when that is provably
safe. It refuses (exit 4) and changes nothing when: there is no checkpoint; its
commit is gone; it is no longer an ancestor of HEAD; the branch changed; a merge,
rebase or cherry-pick is in progress; checkpoint.json disagrees with the ref
wiggum moved when it wrote it (an edited record); or, with the commit journal on
('wiggum install --git'), a commit since the checkpoint cannot be proven this
session's own: made outside it, by another session, or unjournaled. Outside a
session (no 'wiggum lock' around it) no commit is provably its own, so a
standalone rollback refuses to discard any; --discard-foreign goes ahead and
still saves them. With the journal off, the ancestry check is the rule.

Before discarding anything it saves HEAD plus every staged, unstaged and new file
as one commit under refs/wiggum/backup/ ('wiggum recover' lists and restores them).
Then it resets to the checkpoint and removes only the untracked files that did not
exist when the checkpoint was taken. Ignored files are never touched.

  wiggum rollback --dry-run
  wiggum rollback --reason "tests failed"
  wiggum rollback --discard-foreign     # also discard (and save) commits not provably this session's`
}

// Run rolls back.
func (c *RollbackCmd) Run(ctx context.Context, g *Globals) error {
	cmd := checkpointentry.Command{Name: "rollback", DryRun: c.DryRun, Reason: c.Reason, DiscardForeign: c.DiscardForeign, JSON: c.JSON}
	return cmd.Run(ctx, g.WorkDir(), g.stdout)
}

// RecoverCmd is `wiggum recover [REF]`.
type RecoverCmd struct {
	Ref       string        `arg:"" optional:"" help:"Backup to restore (full ref, name under refs/wiggum/backup/, or a unique prefix)."`
	Prune     bool          `help:"Delete backups older than --older-than (also parallel worktrees' submodule backups under refs/wiggum/submodule-backup/)."`
	OlderThan time.Duration `name:"older-than" help:"With --prune: age of backups to delete (e.g. 168h)."`
	DryRun    bool          `help:"With --prune: list what would be deleted."`
	JSON      bool          `name:"json" help:"Print the list as JSON; with --prune: {deleted (refs), dry_run}."`
}

// Help is shown by `wiggum recover --help`.
func (c *RecoverCmd) Help() string {
	return `Without arguments, lists what rollbacks (and recovers) saved under
refs/wiggum/backup/: when, why, and how much each holds. With a backup name it
restores that state under the agent lock: HEAD moves forward to the HEAD it saved
and every file it held comes back byte for byte. The current state is saved as a
new backup first, so a restore loses nothing either.

  wiggum recover
  wiggum recover 20261121T101500
  wiggum recover --prune --older-than 336h`
}

// Run lists, restores or prunes.
func (c *RecoverCmd) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	given := flagsGiven(k)
	switch {
	case !c.Prune && (given["older-than"] || given["dry-run"]):
		// Not silently a listing: the person meant to prune.
		return badinput.Errorf("recover: --older-than and --dry-run go with --prune (wiggum recover --prune --older-than 168h [--dry-run]); without it recover lists or restores")
	case c.Prune && c.Ref != "":
		return badinput.Errorf("recover: --prune takes no backup name")
	case c.Prune && !given["older-than"]:
		return badinput.Errorf("recover: --prune needs --older-than DURATION (e.g. 168h)")
	case c.Prune && c.OlderThan <= 0:
		return badinput.Errorf("recover: --older-than must be more than 0, got %s (e.g. 168h)", c.OlderThan)
	}
	st, err := g.State(ctx)
	if err != nil {
		return err
	}
	if c.Prune {
		gone, err := st.Prune(ctx, c.OlderThan, c.DryRun)
		if err != nil {
			return err
		}
		if c.JSON {
			if gone == nil {
				gone = []string{}
			}
			return writeJSON(g.stdout, struct {
				Deleted []string `json:"deleted"`
				DryRun  bool     `json:"dry_run"`
			}{gone, c.DryRun})
		}
		verb := "deleted"
		if c.DryRun {
			verb = "would delete"
		}
		for _, r := range gone {
			fmt.Fprintf(g.stdout, "%s %s\n", verb, r)
		}
		fmt.Fprintf(g.stdout, "%s %d backup(s) older than %s\n", verb, len(gone), c.OlderThan)
		return nil
	}
	if c.Ref == "" {
		list, err := st.Backups(ctx)
		if err != nil {
			return err
		}
		if c.JSON {
			if list == nil {
				list = []checkpoint.BackupInfo{}
			}
			return writeJSON(g.stdout, list)
		}
		if len(list) == 0 {
			fmt.Fprintln(g.stdout, "no backups")
		}
		for _, b := range list {
			fmt.Fprintf(g.stdout, "%s  %s  %d commit(s), %d file(s), %d line(s)  %s\n",
				strings.TrimPrefix(b.Ref, checkpoint.BackupPrefix), b.Time.Local().Format("2006-01-02 15:04:05"),
				b.Commits, b.Files, b.Lines, b.Reason)
		}
		// What no backup holds, moved out of the tree whole: to be
		// looked at and moved back by hand, never restored by recover.
		nested, aside := st.SetAside()
		for _, p := range nested {
			fmt.Fprintf(g.stdout, "set aside (the git directory of a repository made in the tree; not in any backup): %s\n", p)
		}
		for _, p := range aside {
			fmt.Fprintf(g.stdout, "set aside (a directory moved whole out of a checkpoint's file's way; not in any backup): %s\n", p)
		}
		return nil
	}
	var res *checkpoint.RestoreResult
	err = st.WithLock(ctx, []string{"wiggum", "recover", c.Ref}, func(string) error {
		res, err = st.Restore(ctx, c.Ref)
		return err
	})
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(g.stdout, res)
	}
	fmt.Fprintf(g.stdout, "restored %s (HEAD %s); the state before it is saved in %s\n", res.Ref, res.Head[:12], res.BackupRef)
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
