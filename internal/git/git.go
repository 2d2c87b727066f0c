// Package git drives the git command line for wiggum; it finds every path a
// repository uses as git's rev-parse does (from the files git keeps, or with
// one rev-parse call where they cannot settle it), so it is correct in
// linked worktrees and from subdirectories.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/exitwait"
)

// ErrNotRepo is returned when a directory is not inside a git working tree.
var ErrNotRepo = errors.New("not inside a git working tree")

// Repo is one working tree of a git repository.
type Repo struct {
	Root      string // top of the working tree
	GitDir    string // this worktree's git dir (.git or .git/worktrees/NAME)
	CommonDir string // the shared git dir (objects, refs, info)
	HooksDir  string // where git looks for hooks (honours core.hooksPath)
	InfoDir   string // the shared info dir (exclude)
	// Sign: the commits wiggum writes itself for the user's history
	// (CommitTree: a parallel run's merges, a remote run's landings)
	// are signed, as git commit signs with commit.gpgSign on. Set by
	// whoever read that setting (SignsCommits).
	Sign bool
	// Config: git settings every command of this Repo runs with, passed
	// as GIT_CONFIG_* (a parallel worktree's core.hooksPath, which names
	// the main tree's hooks).
	Config [][2]string
}

// Error is a failed git command with its stderr.
type Error struct {
	Args   []string
	Stderr string
	Err    error
	// Stuck: git was stopped waiting on a FIFO (see stuck.go).
	Stuck *Stuck
}

func (e *Error) Error() string {
	if e.Stuck != nil {
		return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), e.Stuck)
	}
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode returns git's exit status, or -1 when git did not run.
func (e *Error) Status() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// Open finds the working tree that contains dir. It reads git's files
// where they settle the answer (see discover) and asks git otherwise; the
// answer is git's either way.
func Open(ctx context.Context, dir string) (*Repo, error) {
	if r := discover(dir); r != nil {
		return r, nil
	}
	return openWithGit(ctx, dir)
}

// openWithGit is Open's answer from `git rev-parse`.
func openWithGit(ctx context.Context, dir string) (*Repo, error) {
	out, err := run(ctx, dir, nil, nil, "rev-parse", "--path-format=absolute",
		"--show-toplevel", "--git-dir", "--git-common-dir", "--git-path", "hooks", "--git-path", "info")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
		}
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "must be run in a work tree") {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 5 || lines[0] == "" {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotRepo)
	}
	return &Repo{Root: lines[0], GitDir: lines[1], CommonDir: lines[2], HooksDir: lines[3], InfoDir: lines[4]}, nil
}

// Run runs git in the working tree and returns its stdout.
func (r *Repo) Run(ctx context.Context, args ...string) (string, error) {
	out, err := run(ctx, r.Root, r.env(nil), nil, args...)
	return string(out), err
}

// RunEnv runs git with extra environment variables and optional stdin.
func (r *Repo) RunEnv(ctx context.Context, env []string, stdin []byte, args ...string) (string, error) {
	out, err := run(ctx, r.Root, r.env(env), stdin, args...)
	return string(out), err
}

// env is what every git process at the top of this working tree runs
// with: env, and a ceiling just above the tree (CeilingEnv).
func (r *Repo) env(env []string) []string {
	env = append(env[:len(env):len(env)], CeilingEnv(r.Root))
	if len(r.Config) > 0 {
		env = WithConfig(env, r.Config...)
	}
	return env
}

// CeilingEnv is GIT_CEILING_DIRECTORIES for git run at the top of the
// working tree root (and anything under it): git may not look for its
// repository above root. A tree whose .git went missing - a worktree the
// agent ran rm -rf .git in, one half made or half removed - then makes
// git say "not a git repository" instead of finding the repository the
// tree sits in: parallel worktrees live inside the main tree, and a
// commit or a reset --hard there would act on the main repository. Any
// ceiling the user set is kept after it.
func CeilingEnv(root string) string {
	v := filepath.Dir(filepath.Clean(root))
	if old := os.Getenv("GIT_CEILING_DIRECTORIES"); old != "" {
		v += string(filepath.ListSeparator) + old
	}
	return "GIT_CEILING_DIRECTORIES=" + v
}

// Line runs git and returns its stdout without the trailing newline.
func (r *Repo) Line(ctx context.Context, args ...string) (string, error) {
	out, err := r.Run(ctx, args...)
	return strings.TrimRight(out, "\n"), err
}

// OK runs git and reports whether it exited 0; exit 1 is "false", anything
// else is an error.
func (r *Repo) OK(ctx context.Context, args ...string) (bool, error) {
	_, err := r.Run(ctx, args...)
	if err == nil {
		return true, nil
	}
	var ge *Error
	if errors.As(err, &ge) && ge.Status() == 1 {
		return false, nil
	}
	return false, err
}

// command is git with args in dir, as every git process wiggum starts
// is: named "git", in CleanEnv plus env, with procAttr's process
// attributes.
func command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary(), args...)
	cmd.Args[0] = "git"
	cmd.Dir = dir
	base := CleanEnv()
	if kvs := configIn(env); len(kvs) > 0 {
		// Settings env passes as GIT_CONFIG_* go after CleanEnv's own
		// (its lock waits), not over them.
		env = slices.DeleteFunc(slices.Clone(env), isConfigPair)
		base = WithConfig(base, kvs...)
	}
	cmd.Env = append(base, env...)
	cmd.SysProcAttr = procAttr()
	return cmd
}

func run(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return whileIndexLocked(ctx, dir, args, func() ([]byte, error) {
		return runCmd(command(ctx, dir, env, args...), stdin, args)
	})
}

// whileIndexLocked runs git ARGS (once) and runs it again while another
// git holds the index for a moment - an editor's or a shell prompt's git
// status, an IDE's background refresh, which an agent's edits set off -
// and git, which does not wait for it, fails at once. A loop that failed
// an attempt's commit, or refused its rollback, for that stopped an
// unattended run over a lock let go of milliseconds later. git fails
// before it changes anything when it cannot take the lock first
// (locksIndexFirst), so the command is simply run again.
//
// A lock whose holder no longer runs (a git killed mid-command) is
// removed on the way (LockRetry); dir is where the command runs.
func whileIndexLocked[T any](ctx context.Context, dir string, args []string, once func() (T, error)) (T, error) {
	out, err := once()
	if err == nil || !locksIndexFirst(args) {
		return out, err
	}
	for retry := NewLockRetry(); IndexLocked(err); {
		p := lockPathOf(err)
		if !retry.Wait(ctx, p, dir, filepath.Dir(p)) {
			break
		}
		out, err = once()
	}
	return out, err
}

// LockRetry paces the tries of something that failed on a lock another
// process holds: delays growing from 10 ms to 200 ms, each jittered to
// between half and all of itself - a holder that takes the lock at a
// steady pace (an editor's git status on every save) would otherwise meet
// every try at a fixed delay in the same phase - for up to IndexLockWait.
// Every StaleLockAfter it asks whether the lock's holder still runs: a
// lock a killed git left is removed (ClearStaleLock), not waited on until
// the time is up.
type LockRetry struct {
	delay    time.Duration
	deadline time.Time
	asked    time.Time // when the holder was last looked for
}

// NewLockRetry starts the clock of a LockRetry.
func NewLockRetry() *LockRetry {
	now := time.Now()
	return &LockRetry{delay: 10 * time.Millisecond, deadline: now.Add(IndexLockWait), asked: now}
}

// Wait sleeps before the next try on the lock file lock ("" when unknown:
// no holder is looked for; dirs as ClearStaleLock takes them); false (at
// once) once the time is up or ctx is done.
func (l *LockRetry) Wait(ctx context.Context, lock string, dirs ...string) bool {
	if !time.Now().Before(l.deadline) {
		return false
	}
	if lock != "" && time.Since(l.asked) >= StaleLockAfter {
		l.asked = time.Now()
		ClearStaleLock(lock, dirs...)
	}
	d := l.delay/2 + rand.N(l.delay/2+1)
	l.delay = min(l.delay*2, 200*time.Millisecond)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// IndexLockWait bounds how long a git command is tried again while
// another process holds the index lock: such a holder lets go in
// milliseconds; a lock held longer is a stuck or killed git's. (A
// variable for tests of a lock nobody lets go.)
var IndexLockWait = 10 * time.Second

// IndexLocked reports whether err is git failing on an index lock that
// another process holds ("Unable to create '.../index.lock': File
// exists").
func IndexLocked(err error) bool {
	var ge *Error
	return errors.As(err, &ge) && strings.Contains(ge.Stderr, "index.lock': File exists")
}

// locksIndexFirst reports whether the git command args takes the index
// lock before it changes anything, so that one failing on the lock can
// simply run again.
func locksIndexFirst(args []string) bool {
	switch subcommand(args) {
	case "add", "commit", "read-tree", "update-index", "rm", "mv", "reset", "checkout-index", "checkout", "restore", "switch", "apply":
		return true
	}
	return false
}

func runCmd(cmd *exec.Cmd, stdin []byte, args []string) ([]byte, error) {
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Start()
	var stuck *Stuck
	if err == nil {
		stopped := watchStuck(cmd.Process) // stuck.go
		exitwait.For(cmd.Process)          // parked while git runs, not a thread blocked in waitid
		err = cmd.Wait()
		stuck = stopped()
	}
	if err != nil {
		return stdout.Bytes(), &Error{Args: args, Stderr: stderr.String(), Err: err, Stuck: stuck}
	}
	return stdout.Bytes(), nil
}

// CleanEnv drops variables that would point git at another repository or
// index (a git hook runs with GIT_DIR and GIT_INDEX_FILE set) and pins a
// stable, non-interactive, untranslated git that waits for a ref lock
// (lockWaits) instead of failing at once, and that reads the history as
// its commits hold it: replace refs (git replace, a graft) are not
// honoured, so one planted in the repository cannot hide commits from a
// rollback's proof or change what a checkpoint's ancestry checks answer.
func CleanEnv() []string {
	var env []string
	for _, kv := range WithoutRepoEnv(os.Environ()) {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "LANG", "LC_ALL", "LANGUAGE", OwnerEnv:
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", OwnerEnv+"="+strconv.Itoa(os.Getpid()))
	return WithConfig(env, lockWaits...)
}

// repoEnv are the variables that tell git which repository, work tree or
// index to use, whatever its working directory. git sets them for what it
// runs - a hook, a "!" alias run in a linked worktree, a submodule or a
// --separate-git-dir checkout (git loop = !wiggum run ...) - and so does
// direnv or a dotfiles manager.
var repoEnv = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true, "GIT_PREFIX": true, "GIT_COMMON_DIR": true,
	"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_NAMESPACE": true,
}

// WithoutRepoEnv is env less repoEnv: for a git wiggum runs, and for an
// agent or a gate it starts in a tree of its choosing (a parallel
// worker's worktree), whose git must find that tree's repository and
// index, not the ones wiggum was started with.
func WithoutRepoEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !repoEnv[name] {
			out = append(out, kv)
		}
	}
	return out
}

// OwnerEnv names, in the environment of every git wiggum starts, the pid
// of the wiggum that started it: a resumed run can then tell a git its
// killed predecessor left running (one that did not exit on the SIGTERM
// its parent's death sent it) from anyone else's.
const OwnerEnv = "WIGGUM_GIT_OWNER"

// Owner returns the pid of the wiggum that started the process pid (a
// git), from its environment; 0 when it was not one of wiggum's or its
// environment cannot be read.
func Owner(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return 0
	}
	for _, kv := range strings.Split(string(data), "\x00") {
		if v, ok := strings.CutPrefix(kv, OwnerEnv+"="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// WithConfig returns env with the git config settings kvs (key, value)
// added as GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, after any env already
// passes that way (git 2.31 and later read them; older gits ignore them).
// A GIT_CONFIG_COUNT that is not a count is left for git to complain of.
func WithConfig(env []string, kvs ...[2]string) []string {
	count, at := 0, -1
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return env
			}
			count, at = n, i
		}
	}
	out := make([]string, 0, len(env)+2*len(kvs)+1)
	for i, kv := range env {
		if i != at && !strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") {
			out = append(out, kv)
		}
	}
	for i, kv := range kvs {
		out = append(out, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", count+i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", count+i, kv[1]))
	}
	return append(out, "GIT_CONFIG_COUNT="+strconv.Itoa(count+len(kvs)))
}

// isConfigPair: kv is GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n or
// GIT_CONFIG_VALUE_n.
func isConfigPair(kv string) bool {
	return strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") || strings.HasPrefix(kv, "GIT_CONFIG_KEY_") || strings.HasPrefix(kv, "GIT_CONFIG_VALUE_")
}

// configIn is the settings env passes as GIT_CONFIG_COUNT and
// GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n, in order.
func configIn(env []string) [][2]string {
	vals := map[string]string{}
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_CONFIG_") {
			k, v, _ := strings.Cut(kv, "=")
			vals[k] = v
		}
	}
	n, err := strconv.Atoi(vals["GIT_CONFIG_COUNT"])
	if err != nil || n <= 0 {
		return nil
	}
	kvs := make([][2]string, 0, n)
	for i := range n {
		k, ok := vals["GIT_CONFIG_KEY_"+strconv.Itoa(i)]
		if !ok {
			return nil
		}
		kvs = append(kvs, [2]string{k, vals["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]})
	}
	return kvs
}

// NoAutoMaintenance keeps a git command from starting `git maintenance run
// --auto` (or gc --auto) after it. git 2.5x runs it detached after a
// commit, and it packs refs: killed with the agent's process group (a
// timeout, an interrupt, a killed run), it can leave packed-refs.new or
// packed-refs.lock behind, and every ref deletion after it fails. Given
// to the agent's environment; wiggum's own commits pass the same.
var NoAutoMaintenance = [][2]string{{"maintenance.auto", "false"}, {"gc.auto", "0"}}

// NoPushTransport is the remote helper's transport a session's agent's
// pushes are sent to: NoPush rewrites every push URL (a pushInsteadOf of
// "" matches them all, fetches untouched) to NoPushTransport::URL, and git
// runs git-remote-wiggum-no-push - wiggum, by that name on the agent's
// PATH - which refuses. It stops a push that goes round both wiggum's git
// shim and git's hooks: git run by its full path with --no-verify.
const NoPushTransport = "wiggum-no-push"

// NoPush is the git setting behind NoPushTransport, for GIT_CONFIG_*.
var NoPush = [][2]string{{"url." + NoPushTransport + "::.pushInsteadOf", ""}}

// lockWaits make git wait up to ten seconds for a ref lock another git
// holds, where by default it gives up after 100 ms (1 s for packed-refs):
// the user's git, an editor's, a detached `git maintenance run --auto`
// (git 2.5x starts one after a commit) or, in a repository that keeps its
// refs in a reftable - one lock for every ref - any concurrent ref update
// at all, a worker's commit among them. A lease that fails (the ref moved)
// still fails at once. Passed as GIT_CONFIG_KEY_n (git 2.31 and later;
// older gits ignore them), after any the user set.
var lockWaits = [][2]string{
	{"core.filesRefLockTimeout", "10000"},
	{"core.packedRefsTimeout", "10000"},
	{"reftable.lockTimeout", "10000"},
}

// Head returns the sha HEAD points at, or "" when the repository has no commits.
func (r *Repo) Head(ctx context.Context) (string, error) {
	return r.optionalLine(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
}

// Branch returns the full ref HEAD is on (refs/heads/x), or "" when detached.
// HEAD's own file answers when it settles it (a branch under refs/heads/, or
// a commit id); git symbolic-ref is asked otherwise.
func (r *Repo) Branch(ctx context.Context) (string, error) {
	if b, ok := r.headFile(); ok {
		return b, nil
	}
	return r.optionalLine(ctx, "symbolic-ref", "--quiet", "HEAD")
}

// ConfigValue is git config's value of key (git config [opts] --get key),
// "" when it is not set anywhere.
func (r *Repo) ConfigValue(ctx context.Context, key string, opts ...string) (string, error) {
	return r.optionalLine(ctx, append(append([]string{"config"}, opts...), "--get", key)...)
}

// ConfigFile runs git config --file file args as git reads that file
// alone: no repository (git opens the repository's config, and every
// file it includes, at its start whatever the command), no system and no
// user config. A config that includes a FIFO, which blocks every other
// git, is read and edited this way; file's own includes are not followed
// (--file leaves them off).
func ConfigFile(ctx context.Context, file string, args ...string) (string, error) {
	env := []string{"GIT_DIR=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
		"HOME=" + os.DevNull, "XDG_CONFIG_HOME=" + os.DevNull}
	out, err := run(ctx, string(filepath.Separator), env, nil, append([]string{"config", "--file", file}, args...)...)
	return string(out), err
}

// optionalLine runs a --quiet git query whose exit 1 means "there is none".
func (r *Repo) optionalLine(ctx context.Context, args ...string) (string, error) {
	out, err := r.Line(ctx, args...)
	var ge *Error
	if errors.As(err, &ge) && ge.Status() == 1 {
		return "", nil
	}
	return out, err
}

// InProgress names the operation (merge, rebase, cherry-pick, revert, bisect)
// that is half done in this worktree, or "" when none is.
func (r *Repo) InProgress() string {
	// inRefs: a repository that keeps its refs in a reftable keeps these
	// there, not as files (MERGE_HEAD and FETCH_HEAD stay files).
	checks := []struct {
		path, what string
		inRefs     bool
	}{
		{"MERGE_HEAD", "merge", false},
		{"rebase-merge", "rebase", false},
		{"rebase-apply", "rebase or am", false},
		{"CHERRY_PICK_HEAD", "cherry-pick", true},
		{"REVERT_HEAD", "revert", true},
		{"BISECT_LOG", "bisect", false},
	}
	reftable := reftableRefs(r.CommonDir)
	for _, c := range checks {
		if _, err := os.Lstat(filepath.Join(r.GitDir, c.path)); err == nil {
			return c.what
		}
		if reftable && c.inRefs {
			// Not a file there: git says.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ok, err := r.OK(ctx, "rev-parse", "--verify", "--quiet", c.path)
			cancel()
			if ok || err != nil {
				// Unsure is "in progress": the caller refuses, and
				// nothing is lost.
				return c.what
			}
		}
	}
	return ""
}

// SplitZ splits NUL-terminated git output.
func SplitZ(s string) []string {
	var out []string
	for _, p := range strings.Split(s, "\x00") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Objects resolves each name (any revision expression, e.g. "x^{tree}")
// with one `git cat-file --batch-check`: the object id, or "" for a name
// that names no object.
func (r *Repo) Objects(ctx context.Context, names ...string) ([]string, error) {
	var in strings.Builder
	for _, n := range names {
		if strings.ContainsAny(n, "\n\x00") {
			return nil, fmt.Errorf("object name %q has a line break", n)
		}
		in.WriteString(n + "\n")
	}
	out, err := r.RunEnv(ctx, nil, []byte(in.String()), "cat-file", "--batch-check=%(objectname)")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(names) {
		return nil, fmt.Errorf("git cat-file: %d answers for %d names", len(lines), len(names))
	}
	ids := make([]string, len(names))
	for i, l := range lines {
		// A missing or ambiguous name is echoed back with a verdict.
		if !strings.Contains(l, " ") {
			ids[i] = l
		}
	}
	return ids, nil
}

// found is git's path as last looked up, and the PATH it was found on: a
// loop runs git several times an iteration, and each lookup stats every
// directory on PATH before git's.
var found struct {
	sync.Mutex
	path, on string
}

// Binary is the git to run, for the packages that start git themselves.
func Binary() string { return binary() }

// binary is the git to run: the one PATH names, looked up once per PATH.
// A run's PATH changes once, at its start (agent.OnPath), before any agent
// runs: the git found then is the one used for good, whatever a directory
// on PATH gains later.
func binary() string {
	on := os.Getenv("PATH")
	found.Lock()
	defer found.Unlock()
	if found.path != "" && found.on == on {
		return found.path
	}
	p := RealGit()
	if p == "" {
		return "git" // exec says what is wrong
	}
	found.path, found.on = p, on
	return p
}

// RealGit is the first git on PATH that is not this binary: a wiggum
// process in an agent's environment finds wiggum's git shim first on PATH
// (hooks.GitShim), and must not go through it to git. "" when there is
// none; relative PATH entries are skipped, as exec.LookPath does.
func RealGit() string {
	self, _ := os.Executable()
	selfInfo, _ := os.Stat(self)
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "git")
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 || (selfInfo != nil && os.SameFile(fi, selfInfo)) {
			continue
		}
		return p
	}
	return ""
}

// Object is one answer of Batch: the object's id, type and content; ID ""
// when the name names no object.
type Object struct {
	ID, Type string
	Size     int64 // -1 when the name names no object
	Data     []byte
}

// Batch reads each name (any revision expression, e.g. "x^{tree}" or
// "tree:dir") with one `git cat-file --batch`.
func (r *Repo) Batch(ctx context.Context, names ...string) ([]Object, error) {
	var in strings.Builder
	for _, n := range names {
		if strings.ContainsAny(n, "\n\r\x00") {
			return nil, fmt.Errorf("object name %q has a line break", n)
		}
		in.WriteString(n + "\n")
	}
	out, err := r.RunEnv(ctx, nil, []byte(in.String()), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	objs := make([]Object, len(names))
	rest := out
	for i := range names {
		nl := strings.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("git cat-file: %d answers for %d names", i, len(names))
		}
		head := strings.Fields(rest[:nl])
		rest = rest[nl+1:]
		if len(head) != 3 {
			objs[i].Size = -1 // "<name> missing" or "ambiguous"
			continue
		}
		size, err := strconv.Atoi(head[2])
		if err != nil || size+1 > len(rest) {
			return nil, fmt.Errorf("git cat-file: bad header %q", strings.Join(head, " "))
		}
		objs[i] = Object{ID: head[0], Type: head[1], Size: int64(size), Data: []byte(rest[:size])}
		rest = rest[size+1:]
	}
	return objs, nil
}
