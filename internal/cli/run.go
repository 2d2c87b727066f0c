package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/wiggum-dev/wiggum/install"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/charmbracelet/x/term"
	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/gitlock"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/notify"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/internal/telemetry"
	"github.com/wiggum-dev/wiggum/loop"
	"github.com/wiggum-dev/wiggum/remote"
	"github.com/wiggum-dev/wiggum/worktree"
)

// RunCmd is `wiggum run`.
type RunCmd struct {
	PRD    string `name:"prd" placeholder:"N" help:"Use the plan .ralph/PRD-N/plan.md (N a positive integer)."`
	Plan   string `placeholder:"FILE" help:"Use this markdown plan or prd.json (inside the repository)."`
	Issues string `placeholder:"DIR" help:"Use a little-loops issues directory (DIR/<type>/P<n>-<ID>-<slug>.md)."`

	Agent    string   `default:"claude" placeholder:"NAME" help:"Built-in agent: claude, codex, amp, gemini or opencode."`
	Model    string   `placeholder:"MODEL" help:"The built-in agent's model (its --model flag), e.g. --model opus."`
	AgentArg []string `name:"agent-arg" placeholder:"ARG" sep:"none" help:"Add ARG to the built-in agent's command line (repeatable): --agent-arg=--max-turns --agent-arg=30. The flags wiggum sets to run it headless and read its output are refused."`
	AgentCmd string   `name:"agent-cmd" placeholder:"CMD" help:"Any other agent: a shell command that reads the prompt on stdin. It runs in the repository's top directory (with --workers, in each worker's own worktree, which holds committed files only: give scripts outside it by absolute path)."`
	Prompt   string   `placeholder:"FILE" type:"existingfile" help:"Prompt template replacing the built-in one."`
	TestCmd  string   `name:"test-cmd" placeholder:"CMD" help:"Gate run after the agent; the story counts as done only if it exits 0. It runs with CI=true unless CI is set, so that test runners run once instead of watching (Create React App's npm test) and tools ask nothing."`

	Branch        string `placeholder:"NAME" help:"The branch the run commits to: it switches there first, making it from HEAD when no branch (local, or on one remote) has that name. Default: the prd.json's branchName, else the branch checked out."`
	MaxFileSize   int    `name:"max-file-size" default:"50" placeholder:"MB" help:"Leave a new file larger than this many MB out of the loop's commits, in the tree, and take it out of the agent's own commits of the attempt (git hosts refuse such files, and a commit keeps one in the history for good); a file git LFS stores is committed. 0: no limit."`
	CommitMessage string `name:"commit-message" placeholder:"TEMPLATE" help:"Message of each story's commit: {{STORY_ID}}, {{STORY_TITLE}}, {{story_title}} (first letter in lower case), e.g. 'feat: {{story_title}}' for conventional commits. Default: git config wiggum.commitMessage, else '{{STORY_ID}}: {{STORY_TITLE}}'."`

	Retries        int           `default:"2" help:"Attempts after the first before a story is skipped."`
	MaxIter        int           `name:"max-iterations" default:"0" help:"Stop (exit 5) after this many iterations; 0 (the default) allows each open story its attempts (stories x (--retries + 1))."`
	MaxCost        float64       `name:"max-cost" placeholder:"USD" help:"Stop dispatching (exit 5) once the agents report this much spent in the run (kept across a resume)."`
	MaxStoryCost   float64       `name:"max-story-cost" placeholder:"USD" help:"Give up on a story (exit 5 at the end) once its attempts cost this much."`
	Fresh          bool          `name:"fresh" help:"Start a new run even though an interrupted run of another plan is recorded (what it left is still saved first)."`
	NoProgress     int           `name:"no-progress" default:"5" help:"Stop (exit 5) after this many iterations in a row without a completed story."`
	Timeout        time.Duration `default:"1h" help:"Stop an agent, --test-cmd, or the git hooks of a commit that run longer than this (0: no limit)."`
	IdleTimeout    time.Duration `name:"idle-timeout" default:"0s" help:"Stop an agent that prints nothing for this long (0: no limit; else at least 10ms)."`
	Grace          time.Duration `default:"10s" help:"Time between SIGTERM and SIGKILL when stopping an agent."`
	WaitOnLimit    bool          `name:"wait-on-limit" help:"When the agent hits its usage limit, wait for the reset (with a countdown) instead of stopping; when the model service is down, back off and try again."`
	AllowDirty     bool          `name:"allow-dirty" help:"Start on a dirty tree; pre-existing changes are left out of every commit."`
	KeepTests      bool          `name:"keep-tests" help:"An attempt whose changes delete a test file (_test.go, test_*.py, *.test.ts, *.spec.js, FooTest.java, anything in a tests/, __tests__/, testdata/ or __snapshots__/ directory), or switch tests off in one (t.Skip, @pytest.mark.skip, it.skip, it.only, xit, @Disabled, @Ignore, #[ignore] added; test functions taken out or commented out; assertions taken out and none written), fails: rolled back, saved, and retried with its agent told to keep them. Without it the run says so and goes on (a story may remove a feature and its tests)."`
	RetryConflicts bool          `name:"retry-conflicts" help:"With --workers: a story whose finished branch conflicts with what landed meanwhile gets another attempt (if --retries leaves it one) from the branch as it is then, its agent told to merge its kept branch in and resolve the conflict. Without it the branch is kept and the story left open for you."`
	HookPolicy     string        `name:"hook-policy" enum:"rollback,record" default:"rollback" help:"What wiggum's agent hooks do when they see a test run fail mid-iteration: rollback (to the iteration's checkpoint, saving the attempt first; refused when unsafe) or record (only log it and tell the agent)."`
	DryRun         bool          `name:"dry-run" help:"Show the stories and the prompts the run would use, or refuse what the run would refuse (same exit code and message); change nothing."`
	Quiet          bool          `short:"q" help:"Do not echo the agent's output, only the loop's progress."`
	Workers        int           `default:"1" placeholder:"N" help:"Run up to N stories at once, each in its own worktree and branch, merged back one at a time (at most 32)."`

	Notify      []string `placeholder:"URL" sep:"none" help:"Send notifications to URL (repeatable): an http(s) JSON webhook, ntfy://HOST/TOPIC, a Slack webhook (https://hooks.slack.com/... or slack://HOST/PATH), or desktop (notify-send). Added to the config file's."`
	NotifyStuck string   `name:"notify-stuck" placeholder:"DURATION" help:"Notify when no attempt has ended for this long (default 30m, or notify-stuck in the config file; 0 never)."`
	Remote      string   `placeholder:"NAME" help:"Share the plan with wiggum runs on other machines through this git remote: claim each story there before working on it, land by atomic push (see Scaling out in the README)."`
	RemoteFlags
}

// Help is shown by `wiggum run --help`.
func (c *RunCmd) Help() string {
	return `Runs the loop: takes the agent lock for the whole run, then per iteration picks
the next open story, checkpoints, gives the agent the prompt on stdin (with
WIGGUM_SESSION, WIGGUM_STORY and WIGGUM_ITERATION in its environment), and
decides the outcome itself: the agent must exit 0 and --test-cmd, if given,
must pass. Success commits everything the iteration changed (new files too,
but not one over --max-file-size, which stays in the tree; a directory the
agent made a git repository of its own - a git init, a generator's - has its
.git set aside in .git/wiggum-nested/ and its files committed, never a
gitlink; a clone stays in the tree, out of the commit; neither is a reason
for the next run to refuse the tree as dirty) and marks the story done (an
agent that exits 0 having changed nothing gets its story ticked too, and the
run says so); failure is rolled back - only when provably safe,
and saved under refs/wiggum/backup/ first - and the story is retried with
the failure in its prompt, up to --retries, then skipped. The plan is the
record: stories an agent ticks in it itself are taken as done with no
attempt of their own, and the run names them (untick them to have them run).
Your git hooks run on the loop's commits; a pre-commit hook that fixes the
files it checks and fails the commit (a formatter, as the pre-commit framework
runs them) gets its fixes staged and the commit made once more, and one that
fails again fails the attempt, its output in the next prompt. The commit
message is --commit-message (or git config wiggum.commitMessage); a commit-msg
hook (commitlint) is asked before the first attempt whether it takes it, and
the run does not start (exit 2) if not. Should it refuse a later story's
message, the run stops with that work left uncommitted, and the next run, with
a template it takes, commits it without running the agent again.

Nobody is at the terminal: the agent and --test-cmd run without one (a
command that would ask something there fails at once instead of waiting),
and gpg and ssh are not pointed at it. With commit.gpgSign on, every commit
the run puts in your history is signed - parallel merges and --remote
landings too - and the run checks first that signing works with nobody to
type a passphrase (keep the key in ssh-agent or gpg-agent); if it stops
working mid-run, the run stops with the passed story's work left uncommitted,
and the next run commits it without running the agent again.

What the agent leaves in git is settled before the outcome is judged. A
branch it switched to comes back: its commits go onto the attempt's branch
(fast-forward) and a branch it made is removed; one that does not continue
the attempt's branch fails the attempt, saved first. The run's branch, a
branch checked out in another worktree and wiggum's own are never removed:
one the agent committed on (a worker's git switch --ignore-other-worktrees)
goes back to where it was and fails the attempt, saved first. An attempt that
passed having rewritten commits made before it (git commit --amend of the
last story's, a squash, a git reset --hard HEAD~1) gets them back as they
were, and what it changed - its difference from the commit it went back to -
is committed on them as its story's work (the rewrite is saved); rebased onto
commits not its own, or with changes that conflict with them, it fails. A failed attempt that rewrote them cannot be rolled
back (its checkpoint is no longer an ancestor of HEAD): the run stops with
exit 4, changes nothing, and says how to go on. A merge, rebase or
cherry-pick it left in progress is saved and aborted, and
conflicts it left fail the attempt: no conflict marker is ever committed. Work it left in git
stash is put back in the tree. A worktree it made of its own (git worktree
add ../feature) is named, with the commits its branch holds that the run's
does not, and left for you; a failed attempt's is saved and removed with
its branch. A failed attempt's rollback leaves the
stories added to the plan meanwhile (a person queuing work) and removes,
saved first, files the attempt hid behind its own .gitignore change, and
the tags and branches it made or moved onto the work it discarded. A
rollback that itself fails (a full disk) stops the run with exit 1, the
attempt left as it was and the journal open: once that is mended, the next
run resumes it.

The run commits to its branch: --branch NAME, else the prd.json's
branchName (snarktank's ralph), else the branch checked out. It switches
there before the first attempt - the branch if it exists, else the one a
single remote has (tracking it), else a new one made from HEAD - and refuses
(exit 2, nothing changed) when git would not, a file of yours in the way.
A parallel worker's agent told to check that branch out (snarktank's prompt)
stays on its worktree's branch, whose work lands there.

The plan is --prd N, --plan FILE, --issues DIR, or found: prd.json,
.ralph/prd.json, scripts/ralph/prd.json (snarktank's ralph.sh keeps it there), or
a single .ralph/PRD-N/plan.md. Prompt placeholders:
{{STORY_ID}} {{STORY_TITLE}} {{STORY}} {{PLAN_PATH}} {{PROGRESS_PATH}}
{{ITERATION}} {{FAILURE_CONTEXT}}.

Progress: .ralph/wiggum/progress.md (human) and .ralph/wiggum/events.jsonl
(JSON lines); 'wiggum status' shows the live story and iteration.

With --workers N (N > 1) up to N stories run at once, each in its own
worktree under .ralph/wiggum/worktrees/ on its own branch wiggum/<story>,
leased by its worker for its whole life. Finished branches are merged into
the current branch one at a time (conflicts are found with git merge-tree
before anything changes) and the story is ticked in the main tree's plan;
stories its agent added to the plan in its worktree (a markdown plan) are
added to the main tree's plan with it. A branch that cannot merge is kept and reported, and the run exits 5; the
next run lands it once the conflict is resolved on it, and gives its story
to no agent meanwhile (delete the branch to have the story done again); a file
both sides only appended lines to (a progress log) is no conflict: both
additions are kept. The main tree follows each merge only where it has no local changes in the way;
otherwise the branch is kept. Stories should be independent of each other.
Each agent (and --test-cmd) runs in its worktree, so relative paths in
--agent-cmd are taken from there; use absolute ones. A worktree holds
committed files only; the ignored files a .worktreeinclude at the
repository's root names (.gitignore syntax, as Claude Code and Codex read
it: a .env, a local config) are copied into each new worktree, when git
ignores them there too. Every worktree shares
git's stash, so each agent's git (wiggum's, first on its PATH) works with
the stash entries made on its own branch: pop, apply, drop and show take
its newest, list and clear see only its own, and another's is refused.

Resume: the run keeps a journal (.ralph/wiggum/run-journal.jsonl) of every
attempt, its outcome, cost and tokens, and the run's budgets. A run that was
killed (SIGKILL, OOM, reboot), interrupted (Ctrl-C) or stopped by a usage
limit is resumed by the next 'wiggum run' with the same plan: each story's
failed attempts, its failure context and the run's spending carry over. What
the killed run left is never continued blindly: an unfinished attempt in the
main tree is rolled back to its checkpoint, and a worktree whose lease is
free is saved - its branch and uncommitted files in one backup under
refs/wiggum/backup/ - then removed with its branch. Saving rather than
continuing, because a killed attempt stopped at an unknown point (a file
half written, a test half fixed) and its agent's conversation is gone; the
retry starts clean and its prompt names the backup to take what is useful
from. A branch the killed run had already merged is never merged again: its
story is ticked. A story a parallel run finished and had not landed yet -
its attempt recorded done, its branch still exactly at the commit that
attempt recorded, its worktree clean but for the plan - is landed by the
resumed run (resumed with --workers) and not given to the agent again;
anything else in its worktree (a commit after that one, a stray file)
gets it saved and redone. The output says, story by story, which.
An interrupted attempt does not count against --retries.
'wiggum status' says when a run was interrupted and how to resume it.

Usage limits: when an agent reports a usage or rate limit (Claude's
rate_limit_event or limit text, a 429 from Codex or Gemini), no worker
starts another attempt; the limited attempt is rolled back and saved, and
does not count as failed. Without --wait-on-limit the run stops (exit 5)
and resumes when run again; with it, every worker waits until the reported
reset (plus up to 30s of jitter; 15m when none is reported) and the story is
retried. The model service failing after the agent's own retries (an HTTP
5xx: Claude's "API Error: 529 Overloaded", Codex's "unexpected status 503",
Gemini's "model is overloaded", as each reports it in its event stream), or
out of reach (a refused connection; codex stopped by --timeout while it
waits for the network), is handled the same way - rolled back, saved, not counted - except that there
is no reset to wait for: with --wait-on-limit the run tries again after 1m,
then 2m, 4m, 8m and 15m while the outage lasts. A spending cap, a disabled
account or revoked credentials stop the run at once (exit 1).

Budgets: --max-cost and --max-story-cost use the cost the agents report.
Reaching the run's budget stops dispatch; attempts already running finish,
and only finished stories land. The run exits 5 saying what was spent and
what is left.

Notifications (--notify, or notify lines in the config file) tell you when
the run ends, a story fails for good, the run is stuck (--notify-stuck), a
usage limit starts and ends, the guard denies the agent a command, a
merge conflicts or a shared run keeps a branch it could not land, the budget (--max-cost) is reached,
a story's commit deletes test files or switches tests off, or an agent takes open stories out of the plan. They are sent in the background: a slow or failing
endpoint never delays the loop (10s per request, 3 retries with back-off,
a bounded queue; what is dropped is counted and logged), and at the end
the run waits at most 5s for the last ones (a signal cuts the wait short). Secrets in a URL (user info,
query values, a Slack hook's path, an ntfy topic) are never printed or
recorded; but a command line is visible to other users of the machine (ps),
so keep secret URLs in the config file.
  http(s)://HOST/PATH         POST a JSON body: kind, title, text, severity,
                              repo, host, story, time, event (the log line)
  ntfy://HOST/TOPIC           ntfy (https://ntfy.sh/TOPIC too; ntfy+http://
                              for plain http; ntfy://:TOKEN@HOST/TOPIC)
  slack://HOST/PATH           a Slack-compatible incoming webhook
  desktop                     notify-send on this machine
The config file is $WIGGUM_CONFIG, else $XDG_CONFIG_HOME/wiggum/config, else
~/.config/wiggum/config - outside the repository, so a secret URL is never
committed. Lines are key = value:
  # ~/.config/wiggum/config
  notify = https://ntfy.sh/my-secret-topic
  notify = desktop
  notify-stuck = 45m

Watch a run from another terminal with wiggum watch. With the standard
OpenTelemetry variables set (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf
or grpc; OTEL_EXPORTER_OTLP_HEADERS, _COMPRESSION=gzip, _TIMEOUT in ms,
_INSECURE, _CERTIFICATE, _CLIENT_CERTIFICATE/_CLIENT_KEY; OTEL_SERVICE_NAME,
OTEL_RESOURCE_ATTRIBUTES) the run is exported
as one trace: spans wiggum.run > wiggum.story > wiggum.attempt > wiggum.agent,
wiggum.gate, wiggum.rollback, and wiggum.story > wiggum.merge, with story id,
outcome, tokens and cost. Without them nothing is set up or sent; a collector
that does not answer costs the run at most 5s at its end - the same 5s
the last notifications get, not 5s more.
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 wiggum run --workers 4

With --remote NAME the plan is shared with wiggum runs on other machines (each
its own clone, serial or --workers N) through that git remote, with no
service of its own: a story is claimed there as refs/wiggum/claims/<story>,
created only if absent, and renewed every third of --lease while its agent
works; its branch wiggum/<story> is pushed as it progresses. It lands by ONE
atomic push that moves the target branch (merge commit with the plan tick
inside, leased on the tip it was built on) and deletes the claim; another
machine landing first means fetch, re-merge and retry. A machine silent
past its lease (as another machine sees it, on its own clock: machines'
clocks need not agree) loses the story to another, which goes on from its
pushed branch; its own late landing is refused. A conflict keeps the branch on the
server and marks refs/wiggum/conflicts/<story>. A finished story the server
does not take - gone, hanging past --net-timeout, or refusing (a pre-receive
hook; its message is shown) - is kept: its worktree and wiggum/<story> stay
as the attempt left them, the run says so and stays open, and the next run
lands it, claiming it again, without running its agent; if another machine
landed or holds the story by then, that run says so and keeps the branch
for you. Even with one worker, a
shared story runs in its own worktree, as with --workers. See wiggum status
--remote and wiggum claims, and Scaling out in the README for what the
server must allow.

Built-in agents run headless with every tool call allowed (a loop has
nobody to answer a prompt; the lock, checkpoints and hooks are the guard
rails), and with what each needs for wiggum's hooks to run:
  claude  claude -p --output-format stream-json --verbose
          --dangerously-skip-permissions. claude refuses that as root unless
          IS_SANDBOX=1: as root, wiggum stops before the first attempt and
          says so; set IS_SANDBOX=1 yourself on a disposable machine.
  codex   codex exec --json --sandbox workspace-write --trust
          --dangerously-bypass-hook-trust --disable unified_exec_tty
          -c allow_login_shell=false -.
          Codex runs a project's .codex/hooks.json only in a trusted
          project (--trust records that in ~/.codex/config.toml) and only
          hooks the user approved; wiggum bypasses the approval only when
          every hook in .codex/hooks.json is its own, and otherwise refuses
          to start. Terminal sessions are off: what codex types into one
          (write_stdin) reaches no hook, so a shell left open there would
          run commands the guard never sees. Its commands run in no login
          shell, whose profile would set PATH afresh and drop wiggum's git
          shim (below). Its sandbox keeps the network off, so a story that
          installs packages fails there; turn it on for the run with
          --agent-arg=-c --agent-arg=sandbox_workspace_write.network_access=true
  gemini  GEMINI_CLI_TRUST_WORKSPACE=true gemini --approval-mode=yolo
          --output-format stream-json. Headless gemini exits 55 in a
          folder it was never told to trust, and ignores the folder's
          .gemini/settings.json (wiggum's hooks) there; the variable trusts
          it for the run only (its --skip-trust flag starts it, but still
          without the folder's hooks). Gemini also turns git hooks off in
          its shell (core.hooksPath=""), so wiggum's pre-push and
          post-commit hooks never run there; wiggum's git shim stops a
          push and journals a commit there all the same.
Every agent's git - a built-in one's or --agent-cmd's - is wiggum's git
shim: .ralph/wiggum/gitbin/git, a link to wiggum, first on the agent's PATH.
In the session it refuses a push (push, send-pack, an alias for them) even
where git runs no hooks - git push --no-verify, gemini's shell; it journals
the commits that no post-commit hook would - made with git's hooks turned
off, and merge commits - so that a failed attempt that made them can be
rolled back; and it hands everything else to the real git at once. A program that runs git by its full path goes round it, so the agent
also gets the git setting url.wiggum-no-push::.pushInsteadOf="" (through
GIT_CONFIG_*), which sends every push to .ralph/wiggum/gitbin/
git-remote-wiggum-no-push - wiggum again - which refuses; reads of the remote
are untouched. A run started with WIGGUM_ALLOW_PUSH=1 lets its agents push
and sets neither.
A built-in agent whose hooks wiggum cannot find (in the repository or the
home directory) gets a warning at the start: it would run with no guard.
The agents run the hooks as 'wiggum hook ...', looked up on PATH. When PATH
finds no wiggum there, or another one (an older install), the run links
.ralph/wiggum/bin/wiggum to itself, puts that directory on the PATH of
everything it starts (last; first when another wiggum is on PATH), and
says so: otherwise each hook would fail with "command not found", which
the agents take as a non-blocking error and work on unguarded. ('wiggum
lock -- CMD' does the same for CMD.)
With the hooks installed, each attempt also checks that they ran: the
guard hook marks each shell command it sees, and an agent whose first
shell command (as its event stream reports it) went unseen - hooks turned
off in its settings (claude's disableAllHooks, gemini's
hooksConfig.enabled, codex's hooks feature), or a hook command that does
not reach this wiggum - is stopped at that command's result; the attempt
is rolled back (saved first) and the run stops with exit 1, naming the
likely settings. Settings in the agent's own files that turn its hooks
off (claude's disableAllHooks, gemini's hooksConfig, codex's [features]
hooks) are refused before it starts. With --workers or --remote the
agents work in worktrees checked out from HEAD: hooks found only in an
uncommitted settings file would not be there, and such a run is refused
before it starts.
An agent that fails on the run's first attempt before doing anything (no
tool call, no model answer: missing auth, a refusal) stops the run at once
with exit 1 and its own message; the plan and the tree stay as they were.
An attempt that breaks wiggum's hooks - removes or changes their entries
in the agent's hook settings, turns the agent's hooks off, deletes or
rewrites a git hook wiggum installed - fails even when its agent exited
0, however it did it (a script the guard cannot read, say): it is rolled
back, the git hooks are put back (no rollback would: they are not in the
tree), and the story is retried. One that did so where a rollback cannot
reach (a settings file in the home directory, core.hooksPath) stops the
run with exit 1, saying what to put back. The same holds for wiggum's
session files: an attempt that deletes the agent lock file or its holder
record fails, and the run locks the file again so that no second wiggum
gets in; meanwhile the hooks still see the session (WIGGUM_SESSION and
WIGGUM_ROOT in the agent's environment name it), so the guard stays on.

Exit: 0 all stories done; 3 lock held; 4 a rollback was refused; 5 stopped
with work left (iteration cap, no-progress breaker, skipped stories, usage
limit, budget); 1 failed (also a final account condition); 130/143
interrupted.

  wiggum run --prd 1 --test-cmd 'go test ./...'
  wiggum run --plan docs/plan.md --agent codex --timeout 30m
  wiggum run --agent-cmd 'my-agent --yes' --max-iterations 10
  wiggum run --dry-run
  wiggum run --prd 1 --workers 4 --test-cmd 'go test ./...'
  wiggum run --prd 1 --workers 4 --max-cost 20 --wait-on-limit   # overnight
  wiggum run --prd 1 --notify ntfy://ntfy.sh/my-topic --notify-stuck 20m
  wiggum run --prd 1 --workers 2 --remote origin --lease 10m`
}

// Run runs the loop.
func (c *RunCmd) Run(ctx context.Context, g *Globals, k *kong.Context) error {
	if err := c.checkDurations(); err != nil {
		return err
	}
	given := flagsGiven(k)
	if err := c.checkRemoteFlags(given); err != nil {
		return err
	}
	if given["agent"] && c.AgentCmd != "" {
		// Each names the agent: one would be ignored without a word.
		return badinput.Errorf("run: give only one of --agent and --agent-cmd")
	}
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		return badinput.Wrap(err)
	}
	g.warnInterrupted(checkpoint.FromRepo(repo))
	// A run killed while git moved the main tree to a landing (its own
	// parallel merge, or a --remote run following the server) may have
	// left the plan half written - unlinked, not yet written again - with
	// the merge's record beside it. The repository mutex finishes such a
	// merge; take it before the plan is read, or every run after failed
	// on "no such file" and never got to it.
	if _, err := os.Stat(filepath.Join(repo.CommonDir, worktree.IntentFile)); err == nil {
		// The killed git's locks first (HEAD's, a branch's): finishing
		// the merge moves the branch.
		if err := settleGit(ctx, repo, g); err != nil {
			return err
		}
		mu, err := worktree.LockRepo(ctx, repo)
		if err != nil {
			return err
		}
		mu.Unlock()
	}
	p, err := plan.Resolve(repo.Root, g.WorkDir(), plan.Source{PRD: c.PRD, File: c.Plan, Issues: c.Issues})
	if err != nil {
		return err
	}
	if err := noStories(repo.Root, p); err != nil {
		return err
	}
	if err := plan.Unread(p); err != nil {
		return err
	}
	if c.Workers < 1 || c.Workers > loop.MaxWorkers {
		return badinput.Errorf("run: --workers must be between 1 and %d, got %d", loop.MaxWorkers, c.Workers)
	}
	if c.Workers > 1 || c.Remote != "" {
		if err := storyBranchesFree(ctx, repo); err != nil {
			return err
		}
	}
	if c.RetryConflicts && c.Workers == 1 && c.Remote == "" {
		// Not silently ignored either: a serial run has no branches to
		// conflict.
		return badinput.Errorf("run: --retry-conflicts is for a run with --workers N: a serial run commits each story on the branch itself, where nothing conflicts; add --workers, or leave it out")
	}
	if c.RetryConflicts && c.Remote != "" {
		// Not silently ignored: the person counts on the retries.
		return badinput.Errorf("run: --retry-conflicts is not for a run shared through --remote: a story whose branch conflicts there is marked conflicted on the server for a person to resolve (wiggum status --remote), so that no two machines retry it at once; drop one of the two")
	}
	if c.Workers == 1 {
		// A serial run's own code does one thing at a time and otherwise
		// waits for its children: one P spares the runtime's hand-offs
		// between threads and a third of sysmon's wake-ups, ~48 context
		// switches an iteration (bench/README.md, loop section).
		runtime.GOMAXPROCS(1)
	}
	prof, err := c.profile()
	if err != nil {
		return err
	}
	// Every check below reads and changes nothing, and --dry-run makes
	// them all: it refuses what the run would refuse, as the run would.
	if err := agent.Preflight(prof, repo.Root, os.Environ()); err != nil {
		return err
	}
	if err := checkScript(ctx, prof, repo, c.Workers); err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	if err := agent.HooksIgnored(prof, repo.Root, home); err != nil {
		return err
	}
	warn := agent.HooksMissing(prof, repo.Root, home)
	if warn != "" {
		g.Log().Warn(warn)
	} else if a := install.Agents[prof.Name]; a != nil {
		if old := agent.HooksOutdated(prof, repo.Root, home, a.Events()); old != "" {
			g.Log().Warn(old)
		}
	}
	if twice := agent.HooksTwice(prof.Name, repo.Root, home); twice != "" {
		g.Log().Warn(twice)
	}
	verifyHooks := warn == "" && agent.HasHooks(prof.Name)
	if verifyHooks {
		if off := agent.HooksOff(prof.Name, repo.Root, home); off != "" {
			return &agent.UnusableError{Agent: prof.Name, Reason: "its own settings turn wiggum's hooks off (" + off +
				"), so it would work without the guard and without test rollbacks; undo that setting, then run again"}
		}
	}
	if c.Workers > 1 || c.Remote != "" {
		if err := agent.HooksNotCommitted(prof, repo.Root, home, committedHookFiles(ctx, repo)); err != nil {
			return err
		}
	}
	var tmpl string
	if c.Prompt != "" {
		data, err := statefile.ReadFile(c.Prompt)
		if err != nil {
			return badinput.Errorf("run: read --prompt: %v", err)
		}
		tmpl = string(data)
	}
	policy := session.PolicyRollback
	if c.HookPolicy == session.PolicyRecord {
		policy = session.PolicyRecord
	}
	branch, from, err := runBranch(ctx, repo, p, c.Branch)
	if err != nil {
		return err
	}
	if c.MaxFileSize < 0 {
		return badinput.Errorf("run: --max-file-size takes a number of MB, 0 for no limit, not %d", c.MaxFileSize)
	}
	opts := loop.Options{
		Branch: branch, BranchFrom: from, MaxFileSize: int64(c.MaxFileSize) * 1_000_000,
		Plan: p, Agent: prof, Prompt: tmpl, TestCmd: c.TestCmd, CommitMessage: c.CommitMessage,
		Retries: c.Retries, MaxIter: c.MaxIter, NoProgress: c.NoProgress,
		Timeout: c.Timeout, IdleTimeout: c.IdleTimeout, Grace: c.Grace,
		AllowDirty: c.AllowDirty, WaitOnLimit: c.WaitOnLimit, Policy: policy, RetryConflicts: c.RetryConflicts, KeepTests: c.KeepTests,
		MaxCost: c.MaxCost, MaxStoryCost: c.MaxStoryCost, Fresh: c.Fresh,
		Out: g.stdout, Live: isTerminal(g.stdout), Width: func() int { return termWidth(g.stdout) }, Quiet: c.Quiet, Command: notify.RedactArgs(os.Args),
		Workers: c.Workers, VerifyHooks: verifyHooks,
	}
	if c.Remote != "" {
		if err := sharePlan(p); err != nil {
			return err
		}
		if err := onBranch(ctx, repo, branch, from); err != nil {
			return err
		}
	}
	dests, err := c.notifyDests()
	if err != nil {
		return err
	}
	// A bad OTEL_* setting is refused before anything changes.
	tracer, err := telemetry.FromEnv(ctx, Version, func(err error) { g.Log().Warn("telemetry: " + err.Error()) })
	if err != nil {
		return badinput.Wrap(err)
	}
	if c.DryRun {
		_ = tracer.Shutdown(ctx) // nothing was traced
		return loop.DryRun(repo.Root, opts)
	}
	if c.Remote != "" {
		coord, err := c.coordinator(ctx, repo, p, g)
		if err != nil {
			_ = tracer.Shutdown(ctx)
			return err
		}
		opts.Coordinator = coord
	}
	stopNotify := func(context.Context) {}
	worked := false // the loop's work ended uninterrupted: a signal now only ends the flush
	defer func() { flushEnd(ctx, g, stopNotify, tracer, worked) }()
	opts.Tracer = tracer
	// The repository opened above, not a second `git rev-parse`.
	st := checkpoint.FromRepo(repo)
	if err := layout.EnsureExcluded(repo.InfoDir); err != nil {
		// A write that failed (a full disk) is no bad input: exit 1.
		return fmt.Errorf("run: %w", err)
	}
	// The agent's hooks are `wiggum hook ...`, looked up on PATH: they
	// must find this binary, or the agent works unguarded.
	note, err := agent.OnPath(st.Path(layout.RuntimeDir))
	if err != nil {
		return err
	}
	if note != "" {
		g.Log().Warn(note)
	}
	// Every agent's git is wiggum's shim: the push guard holds where git
	// runs no hooks, a commit no post-commit hook sees is journaled, and
	// a parallel worker keeps to its own stash entries.
	if opts.GitShim, err = agent.GitShim(st.Path(layout.RuntimeDir)); err != nil {
		return err
	}
	stop, err := startNotify(g, st, dests)
	if err != nil {
		return err
	}
	stopNotify = stop
	_, err = loop.Run(ctx, st, opts)
	worked = !errors.Is(err, context.Canceled)
	if ierr := Interrupted(ctx); ierr != nil {
		return ierr
	}
	if errors.Is(err, context.Canceled) {
		return Silent(exitInterrupt)
	}
	return diskFull(err)
}

// settleGit clears what a killed wiggum's git processes left in repo
// (gitlock.Settle, beside a possible live run: a git at work is let be),
// logging what it did.
func settleGit(ctx context.Context, repo *git.Repo, g *Globals) error {
	say := func(format string, args ...any) { g.Log().Info(fmt.Sprintf(format, args...)) }
	return gitlock.Settle(ctx, gitlock.SettleOptions{Root: repo.Root, CommonDir: repo.CommonDir, Grace: orphanGrace, Say: say})
}

// runBranch is the branch the run commits to, and where its name comes
// from: --branch, else the plan's (a prd.json's branchName), else "" (the
// branch checked out). A name git would not take for a branch is refused
// here, before anything changes.
func runBranch(ctx context.Context, repo *git.Repo, p plan.Plan, flag string) (string, string, error) {
	name, from := flag, "--branch"
	if name == "" {
		var err error
		if name, err = plan.Branch(p); err != nil {
			return "", "", err
		}
		from = "the branchName of " + filepath.Base(p.Path())
	}
	if name == "" {
		return "", "", nil
	}
	name = strings.TrimPrefix(name, "refs/heads/")
	if ok, err := repo.OK(ctx, "check-ref-format", "refs/heads/"+name); err != nil {
		return "", "", err
	} else if !ok || strings.HasPrefix(name, "-") || name == "HEAD" {
		return "", "", badinput.Errorf("run: %q (%s) is not a name git takes for a branch", name, from)
	}
	return name, from, nil
}

// onBranch refuses a --remote run that is not on the branch named for it:
// the machines land on the server's branch of that name, which this
// clone's must follow, so the person switches (and pushes it, the first
// time) themselves.
func onBranch(ctx context.Context, repo *git.Repo, branch, from string) error {
	if branch == "" {
		return nil
	}
	now, err := repo.Branch(ctx)
	if err != nil {
		return err
	}
	if now != "refs/heads/"+branch {
		have := "a detached HEAD"
		if now != "" {
			have = strings.TrimPrefix(now, "refs/heads/")
		}
		return badinput.Errorf("run --remote: the run's branch is %s (%s) and %s is checked out; switch to it first (git switch %s), so that every machine lands on the server's %s", branch, from, have, branch, branch)
	}
	return nil
}

// diskFull adds to an error that a full disk caused (git's and the
// system's "No space left on device", however deep) what it means and
// what to do, unless it says so already.
func diskFull(err error) error {
	if err == nil {
		return nil
	}
	if !loop.DiskFull(err) || strings.Contains(err.Error(), "disk holding the repository is full") {
		return err
	}
	return &diskFullError{err}
}

type diskFullError struct{ error }

func (e *diskFullError) Error() string {
	return e.error.Error() + ". The disk holding the repository is full: free space, then run again"
}

func (e *diskFullError) Unwrap() error { return e.error }

// coordinator opens the shared run of --remote.
// minIdleTimeout is the shortest --idle-timeout: the agent's silence is
// looked at every quarter of it, and a limit shorter than a process's
// start is no limit anyone means.
const minIdleTimeout = 10 * time.Millisecond

// checkDurations refuses a duration flag no run can keep, before anything
// runs or is written: a negative one, or an idle limit under
// minIdleTimeout (3ns panicked in the first attempt, leaving an
// interrupted run behind).
func (c *RunCmd) checkDurations() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--timeout", c.Timeout}, {"--idle-timeout", c.IdleTimeout}, {"--grace", c.Grace}} {
		if d.v < 0 {
			return badinput.Errorf("run: %s must not be negative, got %s (0: no limit)", d.flag, d.v)
		}
	}
	if c.IdleTimeout > 0 && c.IdleTimeout < minIdleTimeout {
		return badinput.Errorf("run: --idle-timeout must be 0 (no limit) or at least %s, got %s", minIdleTimeout, c.IdleTimeout)
	}
	return nil
}

// checkRemoteFlags refuses an empty --remote, which ran a local run (a
// fleet's script whose variable was unset had every machine do every
// story), and --lease or --net-timeout without --remote, which did
// nothing; given names the flags on the command line.
func (c *RunCmd) checkRemoteFlags(given map[string]bool) error {
	if given["remote"] && strings.TrimSpace(c.Remote) == "" {
		return badinput.Errorf("run: --remote needs the name of a git remote (git remote -v lists them), got an empty one; leave --remote out for a run on this machine alone")
	}
	if c.Remote == "" && (given["lease"] || given["net-timeout"]) {
		return badinput.Errorf("run: --lease and --net-timeout apply to a run shared through --remote; add --remote NAME, or leave them out")
	}
	return nil
}

// storyBranchesFree refuses a repository with a branch named wiggum: the
// story branches of a run with workers or shared through a remote are
// wiggum/<story>, and git cannot have both (its "cannot lock ref" came in
// the middle of the run, exit 1).
func storyBranchesFree(ctx context.Context, repo *git.Repo) error {
	ref := strings.TrimSuffix(worktree.BranchPrefix, "/")
	if ok, _ := repo.OK(ctx, "rev-parse", "--verify", "--quiet", ref); ok {
		return badinput.Errorf("run: a branch named wiggum exists (%s); the story branches of a run with --workers or --remote are wiggum/<story>, and git cannot have both: rename it (git branch -m wiggum NEW-NAME), then run again", ref)
	}
	return nil
}

// flagsGiven names the flags given on k's command line (not defaults).
func flagsGiven(k *kong.Context) map[string]bool {
	given := map[string]bool{}
	if k == nil {
		return given
	}
	for _, p := range k.Path {
		if p.Flag != nil {
			given[p.Flag.Name] = true
		}
	}
	return given
}

func (c *RunCmd) coordinator(ctx context.Context, repo *git.Repo, p plan.Plan, g *Globals) (loop.Coordinator, error) {
	if err := sharePlan(p); err != nil {
		return nil, err
	}
	// The coordinator fetches before the run takes the agent lock and
	// settles what a killed run left: a ref lock its git fetch left in
	// wiggum's mirror of the server's refs failed every later run here.
	if err := settleGit(ctx, repo, g); err != nil {
		return nil, err
	}
	_, r, err := openRemote(ctx, repo.Root, c.Remote, c.RemoteFlags)
	if err != nil {
		return nil, err
	}
	target, err := targetBranch(ctx, repo, "")
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(repo.Root, p.Path())
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, badinput.Errorf("run: the plan %s is outside the repository", p.Path())
	}
	r.Run = strconv.Itoa(os.Getpid()) + "-" + time.Now().UTC().Format("20060102T150405Z")
	r.Workers = c.Workers
	coord, err := remote.NewCoordinator(ctx, r, repo, target, filepath.ToSlash(rel))
	if err != nil {
		return nil, remoteErr(err)
	}
	log := g.Log()
	coord.OnError = func(err error) { log.Warn("renewing a claim failed; retrying", "err", err) }
	coord.OnReadyLanded = func(from *remote.Claim, l *remote.Landed) {
		log.Info("landed a story another process finished and could not land (its claim said ready); no agent ran on it again",
			"story", from.Story, "finished_by", from.Host+"/"+from.Machine, "commit", l.Commit)
	}
	coord.OnKept = func(story, branch string, l *remote.Landed) {
		log.Warn(fmt.Sprintf("%s landed; its branch %s on %s was moved by someone not holding its claim, to commits this landing does not hold: the branch is left there, not deleted - merge what it adds by hand",
			story, strings.TrimPrefix(branch, "refs/heads/"), r.Name), "branch_commit", l.Kept)
	}
	coord.OnWait = func(held []*remote.Claim) {
		var by []string
		for _, h := range held {
			by = append(by, fmt.Sprintf("%s by %s/%s", h.Story, h.Host, h.Machine))
		}
		log.Info(fmt.Sprintf("waiting: the open stories are claimed by other machines; looking again every %s (a claim whose machine stops lapses after its lease)", coord.Poll),
			"claims", strings.Join(by, ", "))
	}
	coord.Ahead = true
	coord.Ride = true
	return &sharedRun{c: coord}, nil
}

// budgetFlag names the cost budget the run was given, "" for none.
func (c *RunCmd) budgetFlag() string {
	switch {
	case c.MaxCost > 0:
		return "--max-cost"
	case c.MaxStoryCost > 0:
		return "--max-story-cost"
	}
	return ""
}

func (c *RunCmd) profile() (agent.Profile, error) {
	if c.AgentCmd != "" {
		if c.Model != "" || len(c.AgentArg) > 0 {
			return agent.Profile{}, badinput.Errorf("run: --model and --agent-arg apply to a built-in agent; with --agent-cmd put them in the command")
		}
		p, err := agent.Custom(c.AgentCmd)
		if err != nil {
			return p, badinput.Errorf("run: %v", err)
		}
		// A command named without a path is looked up on PATH, wherever
		// the agent runs: one that is not there fails every attempt.
		if p.Argv[0] != "sh" && !strings.Contains(p.Argv[0], "/") {
			if _, err := exec.LookPath(p.Argv[0]); err != nil {
				return p, &agent.UnusableError{Agent: "custom", Reason: fmt.Sprintf("%s (the first word of --agent-cmd) is not installed or not in PATH", p.Argv[0])}
			}
		}
		return p, nil
	}
	p, err := agent.Builtin(c.Agent)
	if err != nil {
		return p, badinput.Errorf("run: %v", err)
	}
	if budget := c.budgetFlag(); budget != "" && !p.Cost {
		// The budget counts reported cost: it would never be reached.
		return p, badinput.Errorf("run: %s counts the cost the agent reports, and %s reports none, so the budget would never stop the run; drop %s (or use an agent that reports its cost: claude)", budget, c.Agent, budget)
	}
	if p, err = agent.WithArgs(p, c.Model, c.AgentArg); err != nil {
		return p, badinput.Errorf("run: %v", err)
	}
	// Every iteration would fail the same way; say so once, up front.
	if _, err := exec.LookPath(p.Argv[0]); err != nil {
		return p, &agent.UnusableError{Agent: c.Agent, Reason: fmt.Sprintf("%s is not installed or not in PATH; install it, or choose another with --agent or --agent-cmd", p.Argv[0])}
	}
	return p, nil
}

// termWidth is the terminal's width in columns, or 0 when unknown.
func termWidth(w any) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// isTerminal reports whether w is a terminal, where a redrawn status line
// makes sense; pipes and files get plain lines. A terminal is what answers
// a terminal's ioctl: /dev/null and other character devices are none.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	// Through SyscallConn, not Fd: Fd would put the file in blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	if err := rc.Control(func(fd uintptr) { tty = term.IsTerminal(fd) }); err != nil {
		return false
	}
	return tty
}

// committedHookFiles reads the agents' project hook files at HEAD with one
// git process, for agent.HooksNotCommitted and agent.InstalledHooks.
func committedHookFiles(ctx context.Context, repo *git.Repo) func(path string) ([]byte, bool) {
	files := agent.ProjectHookFiles()
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = "HEAD:" + f
	}
	at := map[string][]byte{}
	if objs, err := repo.Batch(ctx, names...); err == nil {
		for i, o := range objs {
			if o.ID != "" && o.Type == "blob" {
				at[files[i]] = o.Data
			}
		}
	}
	return func(path string) ([]byte, bool) {
		data, ok := at[path]
		return data, ok
	}
}

// checkScript finds, before the first attempt, a custom agent that runs a
// script through an interpreter (sh ./agent.sh, python3 agent.py) whose
// script is not where the agent runs: in the repository's top directory,
// or - with --workers - in each worker's own worktree, which holds the
// committed files only. Every attempt would fail the same way, the shell
// saying "cannot open" and the run going on until --no-progress.
func checkScript(ctx context.Context, p agent.Profile, repo *git.Repo, workers int) error {
	if p.Name != "custom" || len(p.Argv) < 2 || strings.HasPrefix(p.Argv[1], "-") {
		return nil
	}
	switch filepath.Base(p.Argv[0]) {
	case "sh", "bash", "dash", "zsh", "python", "python3", "node", "ruby", "perl":
	default:
		return nil
	}
	script := p.Argv[1]
	path := script
	if !filepath.IsAbs(path) {
		path = filepath.Join(repo.Root, script)
	}
	if _, err := os.Stat(path); err != nil {
		return &agent.UnusableError{Agent: "custom", Reason: fmt.Sprintf("its script %s is not there (%v); the agent runs in the repository's top directory, %s", script, err, repo.Root)}
	}
	if workers < 2 || filepath.IsAbs(script) {
		return nil
	}
	rel, err := filepath.Rel(repo.Root, path)
	tracked := err == nil && filepath.IsLocal(rel)
	if tracked {
		_, err := repo.Run(ctx, "ls-files", "--error-unmatch", "--", filepath.ToSlash(rel))
		tracked = err == nil
	}
	if !tracked {
		or := ""
		if err == nil && filepath.IsLocal(rel) {
			or = ", or commit it"
		}
		return &agent.UnusableError{Agent: "custom", Reason: fmt.Sprintf("with --workers each agent runs in a worktree of its own, which holds the committed files only: there %s names nothing; give its absolute path (%s)%s", script, path, or)}
	}
	return nil
}

// noStories refuses a plan in which no story can be read - a markdown plan
// written without checkboxes, one saved as UTF-16 by a Windows editor, an
// empty userStories - before anything runs: such a run did nothing and
// said "0 story(ies) done, 0 open", exit 0, as if the work were finished.
// A plan that does not read at all is left to the run, which says why.
func noStories(root string, p plan.Plan) error {
	stories, err := p.Stories()
	if err != nil || len(stories) > 0 {
		return nil
	}
	name := p.Path()
	if rel, err := filepath.Rel(root, name); err == nil && !strings.HasPrefix(rel, "..") {
		name = filepath.ToSlash(rel)
	}
	switch p.Kind() {
	case "issues":
		return badinput.Errorf("run: %s holds no issue files (.md, named like P1-BUG-2-crash.md) - nothing to run", name)
	case "prd.json":
		return badinput.Errorf("run: %s has no stories: its userStories list is empty - nothing to run", name)
	}
	if data, err := statefile.ReadFile(p.Path()); err == nil && (bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.IndexByte(data, 0) >= 0) {
		return badinput.Errorf("run: %s is not UTF-8 text (UTF-16, as a Windows editor saves \"Unicode\"?): save it as UTF-8", name)
	}
	return badinput.Errorf("run: %s has no stories wiggum can read: a story is a checkbox line such as \"- [ ] US-1: the title\" (its id, a colon, its title) - nothing to run", name)
}
