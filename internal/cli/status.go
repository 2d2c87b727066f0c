package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/termtext"
	"github.com/wiggum-dev/wiggum/loop"
	"github.com/wiggum-dev/wiggum/worktree"
)

// StatusCmd is `wiggum status`.
type StatusCmd struct {
	JSON   bool   `name:"json" help:"Print stable JSON for scripts (see --help)."`
	Remote string `placeholder:"NAME" help:"Show the run shared through this git remote instead: claims (who, since when, lease left), conflicted and landed stories."`
	Target string `placeholder:"BRANCH" help:"With --remote: the shared target branch (default: the current branch)."`
	RemoteFlags
}

// Help is shown by `wiggum status --help`.
func (c *StatusCmd) Help() string {
	return `Shows who holds the agent lock (and whether that pid is alive or stopped), the checkpoint
(commit, branch, age, whether it is still an ancestor of HEAD), whether the commit
journal is on, how many backups exist, the live run's story and iteration, how
the last run ended (or what an interrupted one left to resume), and the
branches of finished stories a parallel run could not merge.

--json prints one object with these keys (stable; new keys may be added):
  root:       the repository's top directory
  lock:       {held, pid, pid_alive, pid_here (a holder in another PID namespace: its pid here),
              pid_stopped (^Z, SIGSTOP; absent: not stopped), host, started, session, command}
  checkpoint: null or {head, branch, time, age_seconds, ancestor, snapshot,
              unverified} (unverified: why a rollback would not trust it;
              absent when it would)
  journal:    {on, entries}
  backups:    count of refs under refs/wiggum/backup/
  interrupted_restore: a recover or rollback a killed wiggum left half done:
              {op, target, before (the backup of the state before it),
              pid, started, index_lock (the index.lock it left, if there)}
              (absent: none)
  nested_repositories: the .git directories of repositories agents made
              in the tree, set aside in .git/wiggum-nested/ (absent: none)
  set_aside:  directories rollbacks moved whole out of the way of a
              checkpoint's file, in .git/wiggum-aside/ (absent: none)
  left_out:   the .git/info/exclude rules runs wrote for what agents made
              that no commit takes: packages, caches, secrets, builds
              (absent: none)
  run:        null or {story, story_title, iteration, policy, started, last_outcome,
              parallel_workers (a parallel run's --workers; absent: serial),
              workers (a parallel run's attempts running now: [{worker,
              story, story_title, iteration, attempt, attempts, started,
              worktree}]; absent: none)}
  resume:     null, or the last run when it did not end by itself: {open,
              interrupted (no live run holds the lock), plan, kind, workers,
              started, runs, done (stories landed), kept (finished
              stories whose branch could not land: kept, not merged;
              absent: none),
              finished (attempts that passed their checks and were
              killed before their commit: the resumed run commits them,
              not the agent; absent: none), cut_off (attempts the kill cut
              off before they finished: the resumed run rolls each back to
              its checkpoint first; absent: none), failed_attempts,
              interrupted_attempts, spent_usd, max_cost_usd,
              max_story_cost_usd, resume_command, waiting (the usage limit
              or outage its last attempt stopped on), stuck (why it stopped
              on an attempt it could not roll back, a full disk say)}
  last_run:   present when the last run ended by itself: as resume, with
              ended and outcome ("done", or why it stopped)
  kept_branches: finished stories' branches (wiggum/<story>) a parallel run
              could not merge: the next run lands each once it merges
  worktrees:  present during or after a parallel run: as wiggum worktree list --json
  agent_hooks: [{agent, files, committed, user, off, ignored}]: where each
              agent's wiggum hooks are registered (files: project ones as in
              the working tree, and the user's); committed: at HEAD, so
              parallel worktrees get them; off: the agent's own setting
              that turns them off, when one does; ignored: [{file, reason}],
              files that hold them but that the agent does not read (a
              claude settings file that is not valid JSON)
  wiggum_on_path: {self, found, same}: what 'wiggum hook ...' finds on PATH
  errors:     present when a state file is corrupt: a list of messages, each
              naming the file

With --remote NAME (after fetching the shared refs) --json prints instead:
  {remote, target, tip, machine,
   claims: [{story, machine, host, pid, run, since, time, lease_ms, ref, commit, live, lease_left_seconds, mine}],
   conflicts: [{story, machine, host, time, branch, target, paths, ref, commit}],
   landed: [{story, commit, machine, time}]}

  wiggum status --json
  wiggum status --remote origin`
}

// StatusReport is the --json output.
type StatusReport struct {
	Root       string           `json:"root"`
	Lock       LockStatus       `json:"lock"`
	Checkpoint *CheckpointState `json:"checkpoint"`
	Journal    JournalStatus    `json:"journal"`
	Backups    int              `json:"backups"`
	// Interrupted: a recover or rollback a killed wiggum left half done.
	Interrupted *checkpoint.RestoreMark `json:"interrupted_restore,omitempty"`
	// Nested: the .git directories of repositories agents made in the
	// tree, set aside in the git directory (their history, kept).
	Nested []string `json:"nested_repositories,omitempty"`
	// Aside: directories rollbacks moved whole out of the way of a
	// checkpoint's file (a repository of the agent's, ignored files),
	// kept in the git directory.
	Aside []string `json:"set_aside,omitempty"`
	// LeftOut: the rules runs put in .git/info/exclude for what agents
	// made that no commit takes (packages, caches, secrets, builds).
	LeftOut    []string         `json:"left_out,omitempty"`
	Run        *session.Run     `json:"run"`
	Resume     *loop.RunState   `json:"resume"`              // null, or the last run when it did not end by itself
	LastRun    *loop.RunState   `json:"last_run,omitempty"`  // the last run, when it ended by itself
	Kept       []string         `json:"kept_branches"`       // finished stories' branches a parallel run could not merge
	Worktrees  []worktree.Info  `json:"worktrees,omitempty"` // parallel runs' worktrees (see wiggum worktree list --json)
	AgentHooks []agent.Hooks    `json:"agent_hooks"`         // where each agent's wiggum hooks are registered
	OnPath     agent.PathLookup `json:"wiggum_on_path"`      // what the agents' 'wiggum hook ...' runs
	Errors     []string         `json:"errors,omitempty"`

	holderUnreadable, checkpointUnreadable, foreignHolder bool
}

// LockStatus is the lock part of StatusReport.
type LockStatus struct {
	Held     bool `json:"held"`
	PID      int  `json:"pid,omitempty"`
	PIDAlive bool `json:"pid_alive"`
	// PIDHere: the holder's pid in this PID namespace, when its record
	// (pid) was written in another one - a container's run.
	PIDHere int `json:"pid_here,omitempty"`
	// PIDStopped: alive but stopped (^Z, SIGSTOP), holding the lock
	// until resumed or ended.
	PIDStopped bool      `json:"pid_stopped,omitempty"`
	Host       string    `json:"host,omitempty"`
	Started    time.Time `json:"started,omitzero"`
	Session    string    `json:"session,omitempty"`
	Command    []string  `json:"command,omitempty"`
}

// CheckpointState is the checkpoint part of StatusReport.
type CheckpointState struct {
	Head       string    `json:"head"`
	Branch     string    `json:"branch"`
	Time       time.Time `json:"time"`
	AgeSeconds int64     `json:"age_seconds"`
	Ancestor   bool      `json:"ancestor"`
	Snapshot   bool      `json:"snapshot"`
	// Unverified: why a rollback would not trust the checkpoint (its
	// record ref missing, broken or naming another state); absent when
	// it would.
	Unverified string `json:"unverified,omitempty"`
}

// JournalStatus is the journal part of StatusReport.
type JournalStatus struct {
	On      bool `json:"on"`
	Entries int  `json:"entries"`
}

// Run prints the status.
func (c *StatusCmd) Run(ctx context.Context, g *Globals) error {
	if c.Remote != "" {
		rep, err := sharedStatus(ctx, g, c.Remote, c.Target, c.RemoteFlags)
		if err != nil {
			return err
		}
		if c.JSON {
			return writeJSON(g.stdout, rep)
		}
		printShared(g.stdout, rep, true)
		return nil
	}
	st, err := g.StateToRead(ctx)
	if err != nil {
		return err
	}
	r := StatusReport{Root: st.Repo.Root, Kept: []string{}}
	held, err := st.Probe()
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	r.Lock.Held = held
	if held {
		if h, here, err := st.HolderHere(); err != nil {
			r.Errors = append(r.Errors, err.Error())
			r.holderUnreadable = true
		} else if h != nil {
			r.Lock.PID, r.Lock.Host, r.Lock.Started, r.Lock.Session, r.Lock.Command = h.PID, h.Host, h.Started, h.Session, h.Command
			r.Lock.PIDAlive = layout.PIDAlive(here)
			if here != h.PID {
				// A run in another PID namespace: its record's pid is
				// its own there; here it is pid.
				r.Lock.PIDHere = here
			}
			r.Lock.PIDStopped = layout.PIDStopped(here)
		} else if pid := st.LockPID(); pid > 0 {
			// No wiggum record: a bash loop's flock, say. The kernel still
			// knows who took it.
			r.Lock.PID, r.Lock.PIDAlive, r.foreignHolder = pid, layout.PIDAlive(pid), true
			r.Lock.PIDStopped = layout.PIDStopped(pid)
		}
	}
	if cp, err := st.Load(); err == nil {
		cs := &CheckpointState{Head: cp.Head, Branch: cp.Branch, Time: cp.Time,
			AgeSeconds: int64(time.Since(cp.Time).Seconds()), Snapshot: cp.Snapshot != ""}
		cs.Ancestor, _ = st.Repo.OK(ctx, "merge-base", "--is-ancestor", cp.Head, "HEAD")
		cs.Unverified = st.Unverified(ctx, cp)
		r.Checkpoint = cs
	} else if !errors.Is(err, checkpoint.ErrNoCheckpoint) {
		r.Errors = append(r.Errors, err.Error())
		r.checkpointUnreadable = true
	}
	r.Journal.On = st.JournalOn()
	if n, err := st.JournalEntries(); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else {
		r.Journal.Entries = n
	}
	if n, err := st.CountBackups(ctx); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else {
		r.Backups = n
	}
	if m, err := st.Interrupted(); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else {
		r.Interrupted = m
	}
	r.Nested, r.Aside = st.SetAside()
	r.LeftOut = loop.LeftOutRules(st.Repo.CommonDir)
	if run, err := session.ReadRun(st); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else if run != nil && held {
		r.Run = run
	}
	if rs, err := loop.ReadRepoRunState(st); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else if rs != nil && rs.Open {
		rs.Interrupted = !held || !r.Lock.PIDAlive
		if !rs.Interrupted {
			// A live run's current attempt was cut off by nothing.
			rs.CutOff, rs.Finished = nil, nil
		}
		r.Resume = rs
	} else if rs != nil {
		r.LastRun = rs
	}
	if head, err := st.Repo.Branch(ctx); err == nil {
		if kept, err := worktree.Kept(ctx, st.Repo, head); err != nil {
			r.Errors = append(r.Errors, err.Error())
		} else {
			for _, k := range kept {
				r.Kept = append(r.Kept, strings.TrimPrefix(k.Ref, "refs/heads/"))
			}
		}
	}
	if wts, err := worktree.List(ctx, st.Repo); err != nil {
		r.Errors = append(r.Errors, err.Error())
	} else {
		r.Worktrees = wts
	}
	home, _ := os.UserHomeDir()
	r.AgentHooks = agent.InstalledHooks(st.Repo.Root, home, committedHookFiles(ctx, st.Repo))
	if r.AgentHooks == nil {
		r.AgentHooks = []agent.Hooks{}
	}
	if r.OnPath, err = agent.Which(); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	if c.JSON {
		if err := writeJSON(g.stdout, r); err != nil {
			return err
		}
	} else {
		printStatus(g, &r)
	}
	if len(r.Errors) > 0 {
		return errors.New("status: some state could not be read (see above)")
	}
	return nil
}

func printStatus(g *Globals, r *StatusReport) {
	w := g.stdout
	fmt.Fprintf(w, "repository: %s\n", r.Root)
	switch {
	case !r.Lock.Held:
		fmt.Fprintln(w, "lock:       free")
	case r.holderUnreadable:
		fmt.Fprintln(w, "lock:       held; its holder record is unreadable (see the error below)")
	case r.Lock.PID == 0:
		fmt.Fprintln(w, "lock:       held by a process that left no wiggum record (a bash ralph loop?)")
	case r.foreignHolder:
		fmt.Fprintf(w, "lock:       held by pid %d, which left no wiggum record (a bash ralph loop?)%s\n", r.Lock.PID, stoppedNote(r.Lock))
	default:
		alive := "alive"
		switch {
		case r.Lock.PIDStopped:
			alive = "stopped"
		case !r.Lock.PIDAlive:
			alive = "not running here"
		}
		if r.Lock.PIDHere > 0 {
			alive = fmt.Sprintf("of another PID namespace, a container's: pid %d here, %s", r.Lock.PIDHere, alive)
		}
		fmt.Fprintf(w, "lock:       held by pid %d (%s) on %s since %s (%s)%s\n", r.Lock.PID, alive, r.Lock.Host,
			r.Lock.Started.Local().Format(time.RFC3339), time.Since(r.Lock.Started).Round(time.Second), stoppedNote(r.Lock))
	}
	if cp := r.Checkpoint; cp != nil {
		anc := "still an ancestor of HEAD"
		if !cp.Ancestor {
			anc = "NOT an ancestor of HEAD: rollback would refuse"
		}
		if cp.Unverified != "" {
			anc = "UNVERIFIED: rollback would refuse: " + cp.Unverified
		}
		fmt.Fprintf(w, "checkpoint: %s on %s, %s old, %s\n", cp.Head[:12], checkpoint.BranchName(cp.Branch),
			(time.Duration(cp.AgeSeconds) * time.Second).String(), anc)
	} else if r.checkpointUnreadable {
		fmt.Fprintln(w, "checkpoint: unreadable (see the error below)")
	} else {
		fmt.Fprintln(w, "checkpoint: none")
	}
	if r.Journal.On {
		fmt.Fprintf(w, "journal:    on (%d commits recorded)\n", r.Journal.Entries)
	} else {
		fmt.Fprintln(w, "journal:    off (wiggum install --git turns it on)")
	}
	fmt.Fprintf(w, "backups:    %d (wiggum recover lists them)\n", r.Backups)
	if r.Interrupted != nil {
		fmt.Fprintf(w, "restore:    %s\n", r.Interrupted)
	}
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(w, "left out:   %s - what agents made that no commit takes (packages, caches, secrets, builds), in .git/info/exclude; take a line out to commit it\n", strings.Join(r.LeftOut, ", "))
	}
	if n := len(r.Nested); n > 0 {
		fmt.Fprintf(w, "nested:     %d repositories agents made in the tree, their files committed, their .git kept in %s (git --git-dir=DIR log)\n", n, filepath.Dir(r.Nested[0]))
	}
	if n := len(r.Aside); n > 0 {
		fmt.Fprintf(w, "set aside: %d directories rollbacks moved whole out of the way of a checkpoint's file (a repository of an agent's, ignored files), in %s\n", n, filepath.Dir(r.Aside[0]))
	}
	printHooks(w, r)
	if run := r.Run; run != nil && run.Parallel > 0 {
		printParallelRun(w, run, r.Resume)
	} else if run != nil {
		fmt.Fprintf(w, "run:        iteration %d, story %s", run.Iteration, termtext.Clean(run.Story)+" "+termtext.Title(run.StoryTitle))
		if run.LastOutcome != "" {
			fmt.Fprintf(w, ", last outcome: %s", run.LastOutcome)
		}
		fmt.Fprintln(w)
	}
	if rs := r.LastRun; rs != nil && !r.Lock.Held {
		fmt.Fprintf(w, "last run:   %s, %s to %s: %s, %d failed attempt(s), %s; %s\n",
			rs.Plan, rs.Started.Local().Format("Jan 2 15:04"), rs.Ended.Local().Format("Jan 2 15:04"), doneText(rs, ""), rs.Failed, spentText(rs.SpentUSD), lastOutcome(rs.Outcome))
	}
	if len(r.Kept) > 0 {
		fmt.Fprintf(w, "kept:       %s - finished stories a parallel run could not merge; resolve each on its branch and run again (it lands then), or delete it to have the story done again\n", strings.Join(r.Kept, ", "))
	}
	if rs := r.Resume; rs != nil && rs.Interrupted {
		fmt.Fprintf(w, "resume:     the run of %s started %s was interrupted (killed, signalled, or stopped by a usage limit, a model-service outage or an attempt it could not roll back): %s, %d failed and %d interrupted attempt(s), %s",
			rs.Plan, rs.Started.Local().Format("Jan 2 15:04"), doneText(rs, " in it"), rs.Failed, rs.Interrupts, spentText(rs.SpentUSD))
		if rs.MaxCost > 0 {
			fmt.Fprintf(w, " of --max-cost $%.2f", rs.MaxCost)
		}
		if rs.Waiting != "" {
			fmt.Fprintf(w, "\n            its last attempt stopped on: %s", rs.Waiting)
		}
		if rs.Stuck != "" {
			fmt.Fprintf(w, "\n            it stopped because %s", strings.TrimPrefix(rs.Stuck, "run: "))
		}
		if len(rs.Finished) > 0 {
			fmt.Fprintf(w, "\n            finished before the kill, committed by the resumed run without the agent: %s", strings.Join(rs.Finished, ", "))
		}
		if len(rs.CutOff) > 0 {
			fmt.Fprintf(w, "\n            cut off by the kill: the attempt at %s - the resumed run first rolls the tree back to its checkpoint, saving everything in a backup: what was changed or committed since then goes with it (stories added to the plan stay)", strings.Join(rs.CutOff, ", "))
		}
		fmt.Fprintf(w, "\n            resume it with: %s (attempts, failures and spending carry over)\n", rs.Resume)
	}
	if len(r.Worktrees) > 0 {
		var live, waiting, others []string
		for _, wt := range r.Worktrees {
			switch {
			case wt.Foreign:
				others = append(others, wt.Name)
			case wt.Held && r.Run != nil && r.Run.Parallel > 0 && !slices.ContainsFunc(r.Run.Workers, func(x session.Worker) bool { return x.Story == wt.Story }):
				// Leased by the run, but no worker runs an agent in it:
				// made ahead for a next story, or landing.
				waiting = append(waiting, wt.Story)
			case wt.Held:
				live = append(live, wt.Story)
			}
		}
		fmt.Fprintf(w, "worktrees:  %d, %d live", len(r.Worktrees)-len(others), len(live))
		if len(live) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(live, ", "))
		}
		if len(waiting) > 0 {
			fmt.Fprintf(w, ", %d made ahead or landing, no agent in it (%s)", len(waiting), strings.Join(waiting, ", "))
		}
		if len(others) > 0 {
			fmt.Fprintf(w, "; and %d not wiggum's, an agent's or a person's (%s), left as they are", len(others), strings.Join(others, ", "))
		}
		fmt.Fprintln(w, "; wiggum worktree list shows them")
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error:      %s\n", termtext.Lines(e))
	}
}

// printParallelRun says what a live parallel run does now: each worker's
// story, iteration and attempt, and the stories done so far.
func printParallelRun(w io.Writer, run *session.Run, rs *loop.RunState) {
	fmt.Fprintf(w, "run:        parallel, %d workers", run.Parallel)
	if rs != nil && !rs.Interrupted {
		fmt.Fprintf(w, ", %s so far", doneText(rs, ""))
	}
	if len(run.Workers) == 0 {
		fmt.Fprint(w, ", no attempt running now")
		if run.LastOutcome != "" {
			fmt.Fprintf(w, "; last outcome: %s", run.LastOutcome)
		}
	}
	fmt.Fprintln(w)
	for _, wk := range run.Workers {
		fmt.Fprintf(w, "            worker %d: %s, iteration %d, attempt %d of %d\n", wk.Worker,
			termtext.Clean(wk.Story)+" "+termtext.Title(wk.StoryTitle), wk.Iteration, wk.Attempt, wk.Attempts)
	}
}

// printHooks says where the agents' hooks are and what they will run.
func printHooks(w io.Writer, r *StatusReport) {
	if len(r.AgentHooks) == 0 {
		fmt.Fprintln(w, "hooks:      no agent's (wiggum install --claude, --codex, --gemini)")
	}
	label := "hooks:      "
	for _, h := range r.AgentHooks {
		where := strings.Join(h.Files, ", ")
		switch {
		case len(h.Files) == 0 && !h.Committed:
			where = ""
		case h.Committed && len(h.Files) == 0:
			where = "committed, but not in the working tree's files"
		case h.Committed:
			where += " (committed: parallel worktrees get them)"
		case !h.User:
			where += " (not committed: parallel worktrees do not get them)"
		}
		if where != "" {
			fmt.Fprintf(w, "%s%s in %s\n", label, h.Agent, where)
			label = "            "
		}
		// A file the agent ignores whole registers nothing: its hooks
		// never run.
		for _, f := range h.Ignored {
			fmt.Fprintf(w, "%s%s in %s, ignored by %s: %s\n", label, h.Agent, f.File, h.Agent, f.Reason)
			label = "            "
		}
		if h.Off != "" {
			fmt.Fprintf(w, "              but off: %s\n", h.Off)
		}
	}
	if n := r.OnPath.Note(); n != "" {
		fmt.Fprintf(w, "            %s\n", n)
	}
}

// doneText counts the stories rs landed (in a run resumed: where, "in
// it") and names those whose finished branch it kept, not merged, as the
// run's own summary does.
func doneText(rs *loop.RunState, where string) string {
	t := fmt.Sprintf("%d story(ies) done%s", len(rs.Done), where)
	if len(rs.Kept) > 0 {
		t += fmt.Sprintf(", %d kept, not merged (%s)", len(rs.Kept), strings.Join(rs.Kept, ", "))
	}
	return t
}

// lastOutcome says how a run that ended by itself ended.
func lastOutcome(note string) string {
	switch note {
	case "done":
		return "it finished the plan"
	case "":
		return "it ended"
	}
	return "it stopped: " + strings.TrimPrefix(strings.TrimPrefix(note, "run: "), "stopped: ")
}

// stoppedNote tells what to do with a lock holder that is stopped (^Z,
// SIGSTOP): it holds the lock, and does nothing, until someone resumes or
// ends it.
func stoppedNote(l LockStatus) string {
	if !l.PIDStopped {
		return ""
	}
	pid := l.PID
	if l.PIDHere > 0 {
		pid = l.PIDHere // what kill takes here
	}
	return fmt.Sprintf("; it is stopped (^Z or SIGSTOP) and holds the lock until it runs again: resume it (kill -CONT %d, or fg in its terminal) or end it (kill %d)", pid, pid)
}

// spentText is what a run cost as its agents reported it: "cost unknown"
// when none reported any (codex, gemini), not "$0.00 spent".
func spentText(usd float64) string {
	if usd <= 0 {
		return "cost unknown"
	}
	return fmt.Sprintf("$%.2f spent", usd)
}
