// Package layout owns wiggum's files in a working tree - every path under
// .ralph/, the lines that hide them from git - and the agent lock on
// .ralph/.agent-lock with its holder record, session token, probe and
// worktree lease. Nothing else opens or flocks these files, and nothing here
// runs git: a Tree is built from a directory alone, so the hook path can use
// it at the cost of a few file reads.
package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Paths relative to the working-tree root.
const (
	StateDir   = ".ralph"
	LockFile   = ".ralph/.agent-lock"      // contract: the bash loop locks the same file
	HolderFile = ".ralph/.agent-lock.json" // who holds the lock
	RuntimeDir = ".ralph/wiggum"           // checkpoint, journal, logs

	WorktreesDir = RuntimeDir + "/worktrees"     // parallel workers' worktrees
	WorktreeMeta = RuntimeDir + "/worktree.json" // a worker's record inside its worktree
)

// File names inside RuntimeDir.
const (
	CheckpointFile = "checkpoint.json"
	// CheckpointPending is a checkpoint being taken: written before
	// wiggum's checkpoint ref moves, renamed to CheckpointFile after.
	CheckpointPending = "checkpoint.pending.json"
	JournalFile       = "journal.jsonl"
	RunFile           = "run.json"
	FailureFile       = "failures.jsonl"
	EventFile         = "events.jsonl"
	ProgressFile      = "progress.md"
	DebugLog          = "hook-debug.log"
	GuardUnseenFile   = "guard-unseen" // made before an attempt; the guard hook removes it
	ReadsDir          = "reads"
	// HookRollbacksDir holds one file per test-failure rollback an agent's
	// hook has begun and not finished (session.BeginHookRollback).
	HookRollbacksDir = "hook-rollbacks"
	// HookCallsDir holds one empty file per tool call (its tool_use_id)
	// whose failing test run a hook of wiggum's has taken on: a second
	// wiggum hook for the same call (installed at user and project level
	// with different flags) leaves it to the first.
	HookCallsDir = "hook-calls"
	// MuxDir is where the agent's tmux, screen and zellij keep their
	// sockets when the run could make no short directory of its own for
	// them (loop/mux.go): servers of its own, never the person's.
	MuxDir = "mux"
)

// SessionEnv is exported by the lock holder to everything it starts
// (contract).
const SessionEnv = "WIGGUM_SESSION"

// AllowPushEnv set to 1 lets a push through wiggum's pre-push hook while
// a session holds the lock: in the environment of the person pushing
// outside the session, or of the wiggum that starts the session (its
// holder record then says so); not when one of the session's own
// processes - an agent - sets it.
const AllowPushEnv = "WIGGUM_ALLOW_PUSH"

// SharedStashEnv is set in the environment of a parallel run's agents to
// the repository's common git dir: git's stash (refs/stash) is one for all
// the worktrees of a repository, and in that repository wiggum's git shim
// shows each agent only the stash entries made on its own branch
// (hooks.GitShim). Other repositories - a project's tests making their
// own - keep git's stash as it is.
const SharedStashEnv = "WIGGUM_SHARED_STASH"

// TargetBranchEnv is set in the environment of a parallel run's agents to
// the branch their work lands on (checked out in the main tree): wiggum's
// git shim answers an agent's switch to it - snarktank/ralph's prompt has
// the agent check out the prd.json's branchName - by staying on the
// worktree's own branch, which git could not leave for it anyway.
const TargetBranchEnv = "WIGGUM_TARGET_BRANCH"

// RootEnv is exported with SessionEnv: the top of the tree the session
// holds. Together they let a hook tell "no session here" from "this
// session's files were deleted under it" (Tree.Session).
const RootEnv = "WIGGUM_ROOT"

// excludeLines keep runtime state out of every commit and every
// "untracked files" listing.
//
// The runtime directory's line has no trailing slash: a rule ending in
// one matches only a directory, and a .ralph/wiggum that is a symbolic
// link (state kept on another disk) is a file to git.
var excludeLines = []string{"/" + LockFile, "/" + HolderFile, "/" + RuntimeDir}

// StatePaths are the repository-relative paths no agent command may touch
// (a trailing "/" is a directory): the lock, its holder record and the
// runtime directory - the same paths the exclude lines hide from git. The
// rest of .ralph/ (a plan, progress notes) is the user's and the agent's.
func StatePaths() []string { return []string{LockFile, HolderFile, RuntimeDir + "/"} }

// Tree is one working tree's wiggum layout.
type Tree struct {
	Root string // absolute working-tree root
}

// At returns the layout of the working tree rooted at root.
func At(root string) Tree { return Tree{Root: root} }

// Path joins a root-relative, slash-separated path onto the root.
func (t Tree) Path(rel string) string { return filepath.Join(t.Root, filepath.FromSlash(rel)) }

// Used reports whether wiggum has run in this working tree: its state
// directory (.ralph) is there. Where it never ran, what runs in every
// repository (agent hooks installed for the user, git hooks in a shared
// core.hooksPath) creates nothing.
func (t Tree) Used() bool {
	_, err := os.Lstat(t.Path(StateDir))
	return !errors.Is(err, fs.ErrNotExist)
}

// Within reports whether dir is root or inside it, symbolic links
// resolved.
func Within(root, dir string) bool {
	r, errR := filepath.EvalSymlinks(root)
	d, errD := filepath.EvalSymlinks(dir)
	if errR != nil || errD != nil {
		r, d = root, dir
	}
	rel, err := filepath.Rel(r, d)
	return err == nil && filepath.IsLocal(rel)
}

// RuntimePath is the path of a file in the runtime directory.
func (t Tree) RuntimePath(name string) string { return t.Path(RuntimeDir + "/" + name) }

// Runtime returns the path of a file in the runtime directory, creating the
// directory.
func (t Tree) Runtime(name string) (string, error) {
	dir := t.Path(RuntimeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", RuntimeDir, err)
	}
	return filepath.Join(dir, name), nil
}

// EnsureExcluded adds the runtime state to infoDir/exclude unless every line
// is there already.
func EnsureExcluded(infoDir string) error {
	return Exclude(infoDir, "wiggum runtime state", excludeLines)
}

// Gitignores are the .gitignore files that hide wiggum's state where the
// repository's own .gitignore would show it past .git/info/exclude (a
// whitelist: "*", then "!*/", "!*.json" ...; a directory's .gitignore wins
// over its parent's and over info/exclude): one in the runtime directory,
// which is wiggum's, and one in .ralph for the lock files - written only
// where .ralph has none of its own (the rest of .ralph is the person's).
// Each ignores itself, so it is no change in anyone's tree.
var Gitignores = []struct {
	Path, Content string
	Hides         []string // the state paths it hides
}{
	{RuntimeDir + "/.gitignore", "# wiggum's runtime state: never committed, whatever a .gitignore above says\n*\n", []string{RuntimeDir + "/run.json"}},
	{StateDir + "/.gitignore", "# wiggum's agent lock (written by wiggum because a .gitignore above re-includes it)\n/.agent-lock\n/.agent-lock.json\n/.gitignore\n", []string{LockFile, HolderFile}},
}

// excludeLockWait bounds the wait for another writer of the exclude file.
var excludeLockWait = 5 * time.Second

// Exclude adds to infoDir/exclude, under the comment header, the lines of
// rules it does not have yet. When some are missing it reads and writes
// the file again under a lock of its own (infoDir/wiggum-exclude.lock):
// parallel workers, hooks and runs add rules at once, and one's write
// lost another's lines. Reading costs no lock when every rule is there.
func Exclude(infoDir, header string, rules []string) error {
	path := filepath.Join(infoDir, "exclude")
	_, missing, err := missingRules(path, rules)
	if err != nil || len(missing) == 0 {
		return err
	}
	if err := os.MkdirAll(infoDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", infoDir, err)
	}
	// Held for a read and a write; a holder that stopped (SIGSTOP, a
	// frozen machine) is waited for a few seconds, then written without:
	// a lost line is written again by the next commit that needs it, a
	// hang would stop a hook or a run.
	lock := flock.New(filepath.Join(infoDir, "wiggum-exclude.lock"))
	ctx, cancel := context.WithTimeout(context.Background(), excludeLockWait)
	locked, _ := lock.TryLockContext(ctx, 5*time.Millisecond)
	cancel()
	if locked {
		defer lock.Unlock()
	}
	data, missing, err := missingRules(path, rules)
	if err != nil || len(missing) == 0 {
		return err
	}
	out := string(data)
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	out += "# " + header + "\n" + strings.Join(missing, "\n") + "\n"
	if err := renameio.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// missingRules reads the exclude file at path ("" when there is none) and
// lists the rules it lacks.
func missingRules(path string, rules []string) (data []byte, missing []string, err error) {
	data, err = statefile.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, l := range rules {
		if !have[l] {
			have[l] = true
			missing = append(missing, l)
		}
	}
	return data, missing, nil
}
