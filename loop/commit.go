package loop

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/lazyre"
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/worktree"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// treeState is what `git status` says about the working tree.
type treeState struct {
	paths  []string // every changed, staged or untracked path
	staged []string // paths with staged changes
}

func status(ctx context.Context, repo *git.Repo) (*treeState, error) {
	st, err := repo.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("git status: %w", err)
	}
	return changesOf(st), nil
}

// changesOf is the treeState of a git status.
func changesOf(st *git.Status) *treeState {
	ts := &treeState{paths: st.Paths()}
	for _, c := range st.Changes {
		if c.Staged {
			ts.staged = append(ts.staged, c.Path)
		}
	}
	return ts
}

// committer commits what an iteration changed, never the paths that were
// dirty or untracked before the run started.
type committer struct {
	repo  *git.Repo
	env   []string // WIGGUM_SESSION, so a journal hook attributes the commit
	keep  []string // paths dirty before the run, never committed
	keepM map[string]bool
	// repos: the repositories of their own the attempt's agent made in
	// the tree (git init, git clone, a scaffolding tool's git init), as
	// the last commit dealt with them, for the caller to say.
	repos []nestedRepo
	// leftRepos: the repositories of their own left out of a commit this
	// run (clones), left out of every later one without a word.
	leftRepos map[string]bool
	// timeout bounds each commit, the user's git hooks (and a signing
	// program) with it: --timeout; 0 is none.
	timeout time.Duration
	// hookFixed: the paths the user's pre-commit hook changed in the
	// last commitAll, staged and committed with the rest (commitStaged).
	hookFixed []string
	// nested: linked worktrees of this repository inside the tree (a
	// client's subagent worktree in .claude/worktrees/): git add -A would
	// have recorded each as a gitlink, which holds none of its work; the
	// last commit left them out, for the caller to say.
	nested []string
	// maxNew: a new file whose staged content is larger is left out of
	// the commit (--max-file-size; 0 is no limit), and large says which
	// the last commit left out, with their sizes.
	maxNew int64
	large  []largeFile
	// stagedLarge: the ones the agent staged or committed itself, which
	// the commit took out of the index (unstageLarge).
	stagedLarge []largeFile
	// ignoreChanged: the last commitAll took in a change to a
	// .gitignore (hiddenBy says what it hides).
	ignoreChanged bool
	// deletedTests: the test files the last commitAll's changes delete
	// (the agent removed them, or staged or committed their removal),
	// for the caller to say: a story done by taking its tests away is
	// not done. Read from what git add and stagedSince print anyway.
	deletedTests []string
	// touchedTests: the test files (isTestFile) the last commitAll's
	// changes add or modify, for testsSwitchedOff to read
	touchedTests []string
	// written: every path the last commitAll's changes add or modify;
	// rawLFS: the ones git LFS would store that it committed as they
	// are, git-lfs not set up here (unfilteredLFS), for the caller to say.
	written []string
	rawLFS  []string
	// pulled: the directories of packages and the large files that
	// came with commits the attempt pulled from a remote: others', they
	// stay in the tree (cleanAgentCommits).
	pulled []string
	// mayBeStaged: the index may hold what was staged before the
	// commit's own git add (an agent's git add -A, a kill between an add
	// and the reset after it), which that add does not name again: a
	// repository of its own staged as a gitlink, and packages, are looked
	// for there too (stagedSince). The executor clears it when the index
	// is as its attempt found it.
	mayBeStaged bool
	// linkBase: the commit the attempt started from, when the committer
	// is an attempt's: a gitlink the agent's own commits added since is
	// taken in the same way (the loop's commit makes it files); "" is
	// HEAD. committedLinks: the gitlinks found so, taken out of the
	// index rather than reset to HEAD's.
	linkBase       string
	committedLinks map[string]bool
	// deps: the directories of installed packages and caches the last
	// commit left out (depDirsOf), for the caller to say; depsErr: why
	// .git/info/exclude could not get their rules.
	deps    []depDir
	depsErr error
	// plan: the plan's path from the root (the main tree's committer);
	// staged counts the paths other than it the last add staged or
	// removed, for changedNothing.
	plan   string
	staged int
}

// largeFile is a new file the loop left out of a commit for its size.
type largeFile struct {
	Path string
	Size int64
	// Committed: the agent's own commit took it in (cleanHistory made
	// its commits again without it, or could not).
	Committed bool
}

// newCommitter is a committer of repo for the run: its commits' hooks get
// the run's --timeout.
func (r *run) newCommitter(repo *git.Repo, env []string, keep []string) *committer {
	c := &committer{repo: repo, env: env, keep: keep, keepM: map[string]bool{}, leftRepos: map[string]bool{}, timeout: r.opts.Timeout, maxNew: r.opts.MaxFileSize, plan: r.planRel, mayBeStaged: true}
	for _, p := range keep {
		c.keepM[p] = true
	}
	return c
}

// noAutoGC keeps the loop's commits from running git's automatic
// maintenance: it would cost every iteration a process, and the user's next
// own commit still runs it.
var noAutoGC = []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}

// commitCmd is `git commit` as the loop runs it: quiet, because the
// summary it would print ends in a diffstat - a diff of every file the
// commit changed, the whole plan among them, which at 10,000 stories cost
// more than the commit itself. The new commit's id is read from its ref.
// The message is taken as given (--cleanup=whitespace, git's own default
// for a message nobody edits): with a person's commit.cleanup=strip, git
// took a "#12 ..." message for a comment, found it empty and refused every
// passed attempt's commit.
func commitCmd(args ...string) []string {
	return append(append(append([]string{}, noAutoGC...), "commit", "-q", "--cleanup=whitespace"), args...)
}

func (c *committer) git(ctx context.Context, stdin []byte, args ...string) (string, error) {
	return c.repo.RunEnv(ctx, c.env, stdin, args...)
}

// changes lists what the working tree changed, leaving out kept paths.
func (c *committer) changes(ctx context.Context) (*treeState, error) {
	ts, err := status(ctx, c.repo)
	if err != nil {
		return nil, err
	}
	if len(c.keep) == 0 {
		return ts, nil
	}
	var own []string
	for _, p := range ts.paths {
		if !c.keepM[p] {
			own = append(own, p)
		}
	}
	ts.paths = own
	return ts, nil
}

// commitAll commits every change in the working tree except kept paths. It
// returns the new commit's short id, or "" when nothing changed.
func (c *committer) commitAll(ctx context.Context, message string) (string, error) {
	// What the adds below find is said of this commit as a whole: a
	// formatter hook's second add must not forget the first's.
	c.hookFixed, c.staged, c.repos, c.stagedLarge, c.deletedTests, c.touchedTests, c.ignoreChanged = nil, 0, nil, nil, nil, nil, false
	c.written, c.rawLFS = nil, nil
	if len(c.keep) == 0 {
		// Nothing to leave out: git add -A and commit say themselves
		// whether anything changed (commit's "nothing to commit" is
		// ""), so the status call would only cost a process.
		stage := func() error { return c.addAll(ctx, ":/\x00") }
		if err := stage(); err != nil {
			return "", fmt.Errorf("stage changes: %w", err)
		}
		killpoint.At("commit-staged")
		sha, err := c.commitStaged(ctx, message, stage)
		return c.committed(ctx, sha, err)
	}
	ts, err := c.changes(ctx)
	if err != nil {
		return "", err
	}
	if len(ts.paths) == 0 && len(ts.staged) == 0 {
		return "", nil
	}
	if err := c.stageExcept(ctx, ts); err != nil {
		return "", fmt.Errorf("stage changes: %w", err)
	}
	killpoint.At("commit-staged")
	sha, err := c.commitStaged(ctx, message, func() error {
		ts, err := c.changes(ctx)
		if err != nil {
			return err
		}
		return c.stageExcept(ctx, ts)
	})
	return c.committed(ctx, sha, err)
}

// committed is commitAll's answer once its commit (sha, err) is made:
// c.rawLFS says what of it git LFS would have stored, not set up here.
func (c *committer) committed(ctx context.Context, sha string, err error) (string, error) {
	if err != nil || sha == "" {
		return sha, err
	}
	large := c.leftLarge()
	written := slices.DeleteFunc(c.written, func(p string) bool {
		return git.IsState(p) || under(c.deps, p) != nil || slices.ContainsFunc(large, func(f largeFile) bool { return f.Path == p })
	})
	c.rawLFS = c.unfilteredLFS(ctx, written)
	return sha, nil
}

// commitStaged commits what is staged. A pre-commit hook of the user's
// that changes the files it checks - a formatter (black, ruff format,
// prettier, end-of-file-fixer, as the pre-commit framework runs them) -
// fails the commit on purpose, for the person to look at the changes and
// commit again. Unattended, wiggum does what the person would: it stages
// again (stage) and, when the hook did change what is staged, commits
// once more, the hook running again on its own output. A hook that
// changed nothing, or fails again, fails the commit with what it said.
// c.hookFixed names the paths the hook changed.
func (c *committer) commitStaged(ctx context.Context, message string, stage func() error) (string, error) {
	// The message goes on stdin: a story's title can be longer than an
	// argument may be (128 KiB on Linux).
	args := commitCmd("-F", "-")
	sha, err := c.run(ctx, args, message)
	var ge *git.Error
	if err == nil || !errors.As(err, &ge) || ge.Status() != 1 {
		return sha, err
	}
	// Only on a failed commit: the index as the hook saw it, and again
	// after staging what the hook left in the tree.
	before, werr := c.repo.Line(ctx, "write-tree")
	if werr != nil || stage() != nil {
		return "", err
	}
	after, werr := c.repo.Line(ctx, "write-tree")
	if werr != nil || after == before {
		return "", err
	}
	changed, _ := c.repo.Run(ctx, "diff-tree", "-r", "-z", "--name-only", before, after)
	c.hookFixed = git.SplitZ(changed)
	sha, again := c.run(ctx, args, message)
	if again != nil {
		return "", fmt.Errorf("%w; staged what the hook changed (%s) and committed again: %w", err, summarize(c.hookFixed, 5), again)
	}
	return sha, nil
}

// stageExcept stages everything but the kept paths, first unstaging kept
// paths an agent may have added.
func (c *committer) stageExcept(ctx context.Context, ts *treeState) error {
	var unstage strings.Builder
	for _, p := range ts.staged {
		if c.keepM[p] {
			unstage.WriteString(":(top,literal)" + p + "\x00")
		}
	}
	if unstage.Len() > 0 {
		if _, err := c.git(ctx, []byte(unstage.String()), "reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	spec := ":/\x00"
	for _, p := range c.keep {
		spec += ":(top,literal,exclude)" + p + "\x00"
	}
	return c.addAll(ctx, spec)
}

// addAll runs git add -A on spec (NUL-separated pathspecs).
//
// A new directory that is a repository of its own - an agent's git init,
// a scaffolding tool's (rails new, uv init), a git clone - git would record
// as a gitlink: a commit id that every clone of the project gets as an
// empty directory, the files themselves in no history. Or git refuses the
// whole add, when that repository has no commit yet ("does not have a
// commit checked out"). So such a directory is never committed as a
// gitlink (takeNested): one the agent made with no remote has its .git
// set aside - its history kept in the git directory - and its files are
// staged as this repository's; a clone is left out and stays where it is.
// c.repos says which.
func (c *committer) addAll(ctx context.Context, spec string) error {
	c.deps, c.depsErr, c.committedLinks = nil, nil, nil
	for p := range c.leftRepos {
		spec += ":(top,literal,exclude)" + p + "\x00"
	}
	for tries := 0; ; tries++ {
		if tries > 1000 {
			return fmt.Errorf("stage changes: more than 1000 repositories of their own in the tree")
		}
		out, err := c.git(ctx, []byte(spec), append([]string{"add", "-A", "-v", "--pathspec-from-file=-", "--pathspec-file-nul"}, c.sparse()...)...)
		var ge *git.Error
		if err == nil && tries == 0 && c.mayBeStaged {
			var links, added []string
			if links, added, err = c.stagedSince(ctx); err == nil {
				for _, p := range links {
					// As git add names a repository it stages.
					out += "\nadd '" + p + "/'"
				}
				err = c.unstageDeps(ctx, added)
			}
			if err == nil {
				err = c.unstageLarge(ctx, added)
			}
		}
		if err == nil {
			again, err := c.unstageState(ctx, out)
			if err != nil || !again {
				return err
			}
			// A repository's .git was set aside: stage its files.
			continue
		}
		if !errors.As(err, &ge) {
			return err
		}
		var unborn []string
		for _, line := range strings.Split(ge.Stderr, "\n") {
			rest, ok := strings.CutPrefix(line, "error: '")
			if p, found := strings.CutSuffix(rest, "' does not have a commit checked out"); ok && found {
				unborn = append(unborn, strings.TrimSuffix(p, "/"))
			}
		}
		if len(unborn) == 0 || len(c.repos) > 1000 {
			return err
		}
		for _, p := range unborn {
			if slices.ContainsFunc(c.repos, func(n nestedRepo) bool { return n.Path == p }) {
				return err // dealt with and still refused: not ours to mend
			}
			n, _ := c.takeNested(ctx, p, true)
			c.repos = append(c.repos, n)
			if n.Aside == "" {
				spec += ":(top,literal,exclude)" + p + "\x00"
				c.leftRepos[p] = true
			}
		}
	}
}

// sparse is --sparse, for git add and git rm --cached, in a sparse
// checkout (git sparse-checkout writes info/sparse-checkout in the
// worktree's git directory); nil elsewhere. Without it git add -A refuses
// a new file outside the cone, with a hint block for a person - the
// agent's work, its attempt failed for wiggum's staging - and passes
// over a tracked file there without a word, a story's change to it left
// uncommitted; git rm --cached takes nothing out there. With it, what
// the cone leaves out of the tree (skip-worktree) is left as it is. A
// stat, no process.
func (c *committer) sparse() []string { return sparseFlag(c.repo) }

// sparseFlag is committer.sparse of repo.
func sparseFlag(repo *git.Repo) []string {
	if _, err := os.Stat(filepath.Join(repo.GitDir, "info", "sparse-checkout")); err != nil {
		return nil
	}
	return []string{"--sparse"}
}

// nestedRepo is a repository of its own that an attempt's agent made
// inside the tree, as the loop's commit dealt with it.
type nestedRepo struct {
	Path string
	// Aside: its .git, moved here; its files were staged as the tree's.
	Aside string
	// URL: a clone's remote, its user info taken out. Left out of the
	// commit, it stays in the tree.
	URL string
	// Why its .git could not be set aside: left out.
	Why string
}

// say is what the run prints of n; inWorktree: the attempt ran in a
// parallel worker's worktree, which its backup keeps when it goes.
func (n nestedRepo) say(inWorktree bool) string {
	stays := "it stays in the tree"
	if inWorktree {
		stays = "its worktree's backup keeps it (wiggum recover)"
	}
	switch {
	case n.Aside != "":
		return fmt.Sprintf("%s/ was a git repository of its own (a git init): its files are committed as this repository's - a gitlink would leave every clone an empty directory - and its own history is kept in %s (git --git-dir=%s log)", n.Path, n.Aside, n.Aside)
	case n.URL != "":
		return fmt.Sprintf("%s/ is a clone of %s: not committed - a gitlink would leave every clone an empty directory; %s. To keep it as a submodule: git submodule add %s %s", n.Path, n.URL, stays, n.URL, n.Path)
	}
	return fmt.Sprintf("%s/ is a git repository of its own: not committed, its .git could not be set aside (%s); %s", n.Path, n.Why, stays)
}

// takeNested deals with path, a directory git found to be a repository
// of its own as it staged the attempt's changes. It reports false when
// the directory is git's to record as it does: a registered submodule
// (in .gitmodules), a gitlink HEAD has already (the agent committed it,
// or the person), or a .git that is a file (a submodule's, another
// repository's worktree) - unless unborn, when git refuses it anyway and
// it is left out. Otherwise a repository with a remote (a clone) is left
// out; one without (a git init) has its .git moved under
// checkpoint.NestedAside,
// from where its history can be read and put back.
func (c *committer) takeNested(ctx context.Context, path string, unborn bool) (nestedRepo, bool) {
	n := nestedRepo{Path: path}
	gitDir := filepath.Join(c.repo.Root, filepath.FromSlash(path), ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil || !fi.IsDir() {
		if !unborn {
			return n, false
		}
		n.Why = "its .git is not a directory"
		return n, true
	}
	if !unborn {
		if ok, _ := c.repo.OK(ctx, "cat-file", "-e", "HEAD:"+path); ok && !c.committedLinks[path] {
			return n, false
		}
		if c.registered(ctx, path) {
			return n, false
		}
	}
	if n.URL = cloneOf(ctx, c.repo, gitDir); n.URL != "" {
		return n, true
	}
	aside, err := checkpoint.SetAsideGit(c.repo, path)
	if err != nil {
		n.Why = err.Error()
		return n, true
	}
	n.Aside = aside
	return n, true
}

// stagedSince lists the gitlinks the index holds that the attempt's start
// (linkBase, or HEAD) did not: a repository of its own (or a worktree of
// this one) staged before the commit's own git add - by an agent's git
// add -A, which records an agent's git init as a gitlink - or committed
// by the agent, which that add, finding it staged already, does not name.
// added is every other path added since. One process.
func (c *committer) stagedSince(ctx context.Context) (links, added []string, err error) {
	base := c.linkBase
	if base == "" {
		base = "HEAD"
	}
	out, err := c.git(ctx, nil, "diff", "--cached", "--raw", "-z", "--no-renames", "--diff-filter=ATDM", base)
	if err != nil {
		return nil, nil, err
	}
	fields := strings.Split(out, "\x00")
	var gone [][2]string // path, blob
	blobs := map[string]bool{}
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(fields[i])
		if len(meta) >= 5 && meta[4] == "D" {
			gone = append(gone, [2]string{fields[i+1], meta[2]})
			continue
		}
		// Added, its type changed, or modified: a .gitignore so is a
		// change of the rules (hiddenBy).
		c.ignoreChanged = c.ignoreChanged || path.Base(fields[i+1]) == ".gitignore"
		c.touchedTest(fields[i+1])
		if len(meta) < 2 || meta[1] != "160000" {
			c.wrote(fields[i+1])
		}
		if len(meta) >= 5 && meta[4] == "M" {
			continue
		}
		if len(meta) >= 4 {
			blobs[meta[3]] = true
		}
		if len(meta) < 2 || meta[1] != "160000" {
			added = append(added, fields[i+1])
			continue
		}
		p := fields[i+1]
		links = append(links, p)
		if c.linkBase != "" {
			// The agent's commit may have it: HEAD's having it is
			// no reason to leave it a gitlink.
			if c.committedLinks == nil {
				c.committedLinks = map[string]bool{}
			}
			c.committedLinks[p] = true
		}
	}
	for _, g := range gone {
		if !blobs[g[1]] { // the same content added elsewhere: moved
			c.deletedTest(g[0])
		}
	}
	return links, added, nil
}

// hiddenBy lists what a .gitignore change of the attempt's hides from git
// that the attempt made (modified since started) and that is not a
// package, cache, secret or build output (depDirsOf): the agent's own
// work, which an ignore rule too wide (*.js for one file) kept out of
// the story's commit, the story ticked all the same. Only paths whose
// rule (git check-ignore -v) is a line of a .gitignore that the
// attempt's start (base) did not have: what older rules hide is the
// person's choice. A few git processes, only when the commit took in a
// .gitignore change. Directories git names whole (ls-files --directory)
// are one path each.
func (c *committer) hiddenBy(ctx context.Context, base string, started time.Time) []string {
	if !c.ignoreChanged || started.IsZero() || base == "" {
		return nil
	}
	out, err := c.repo.Run(ctx, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory")
	if err != nil || out == "" {
		return nil
	}
	var made []string
	for _, p := range git.SplitZ(out) {
		q := strings.TrimSuffix(p, "/")
		if q == "" || git.IsState(q) || git.IsState(p) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(c.repo.Root, filepath.FromSlash(q))); err != nil || fi.ModTime().Before(started) {
			continue
		}
		probe := q
		if strings.HasSuffix(p, "/") {
			probe = q + "/x" // a directory: judged by its name
		}
		if len(depDirsOf(c.repo.Root, []string{probe})) > 0 {
			continue
		}
		made = append(made, p)
	}
	if len(made) == 0 {
		return nil
	}
	// Which rule hides each: source, line, pattern, path per record.
	why, err := c.repo.RunEnv(ctx, nil, []byte(strings.Join(made, "\x00")+"\x00"), "check-ignore", "-v", "-z", "--stdin")
	if err != nil && why == "" {
		return nil
	}
	f := strings.Split(why, "\x00")
	old := map[string][]string{} // a .gitignore's lines at base
	var hidden []string
	for i := 0; i+3 < len(f); i += 4 {
		source, pattern, p := f[i], f[i+2], f[i+3]
		if path.Base(source) != ".gitignore" || filepath.IsAbs(source) {
			continue // info/exclude, a global file: not the attempt's
		}
		lines, ok := old[source]
		if !ok {
			data, _ := c.repo.Run(ctx, "show", base+":"+source)
			lines = strings.Split(data, "\n")
			old[source] = lines
		}
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSpace(l) == pattern }) {
			hidden = append(hidden, p)
		}
	}
	return hidden
}

// deletedTest records p, a path whose deletion the commit takes in, when
// it is a test file (isTestFile), once.
func (c *committer) deletedTest(p string) {
	if isTestFile(p) && !slices.Contains(c.deletedTests, p) {
		c.deletedTests = append(c.deletedTests, p)
	}
}

// touchedTest records p, a path the commit adds or modifies, when it is
// a test file (isTestFile), once.
func (c *committer) touchedTest(p string) {
	if isTestFile(p) && !slices.Contains(c.touchedTests, p) {
		c.touchedTests = append(c.touchedTests, p)
	}
}

// wrote records p, a path the commit adds or modifies - not a directory
// (a repository of its own, which git names with a slash).
func (c *committer) wrote(p string) {
	if !strings.HasSuffix(p, "/") {
		c.written = append(c.written, p)
	}
}

// isTestFile reports whether p, from the root, is a test by its name or
// its directory: Go's _test.go, Python's test_*.py and *_test.py, the
// JavaScript and TypeScript .test. and .spec. files, Ruby's _spec.rb,
// Java's and Kotlin's *Test and *Tests classes, and whatever is in a
// test, tests, spec, specs or __tests__ directory, or is a test's data
// (Go's testdata/, Jest's __snapshots__/: a deleted snapshot is
// rewritten to whatever the code now prints).
func isTestFile(p string) bool {
	dir, base := path.Split(p)
	for _, part := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		switch part {
		case "test", "tests", "spec", "specs", "__tests__", "__snapshots__", "testdata":
			return true
		}
	}
	name, ext, _ := strings.Cut(base, ".")
	ext = "." + ext
	switch {
	case strings.HasSuffix(base, "_test.go"), strings.HasSuffix(base, "_test.py"), strings.HasSuffix(base, "_spec.rb"):
		return true
	case strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py"):
		return true
	case strings.Contains(ext, ".test.") || strings.Contains(ext, ".spec."):
		return true
	case (ext == ".java" || ext == ".kt") && (strings.HasSuffix(name, "Test") || strings.HasSuffix(name, "Tests")):
		return true
	}
	return false
}

// unstageDeps takes out of the index the directories of installed packages
// and caches among added (staged since the attempt's start, or committed
// by the agent: its git add -A, its commit) that the attempt's start did
// not track, and excludes them (depDirsOf): the loop's own add left only
// the ones it staged itself out. One the agent committed is taken out of
// the tree by the story's commit; its history keeps it.
func (c *committer) unstageDeps(ctx context.Context, added []string) error {
	base := c.linkBase
	if base == "" {
		base = "HEAD"
	}
	dirs := newDepDirs(ctx, c.repo, base, depDirsOf(c.repo.Root, added))
	for i := range dirs {
		dirs[i].Committed, _ = c.repo.OK(ctx, "cat-file", "-e", "HEAD:"+dirs[i].Path)
	}
	// Pulled from a remote: others', in the tree as they pushed it.
	dirs = slices.DeleteFunc(dirs, func(d depDir) bool { return d.Committed && slices.Contains(c.pulled, d.Path) })
	if len(dirs) == 0 {
		return nil
	}
	args := append(append([]string{"rm", "-r", "--cached", "-f", "-q", "--ignore-unmatch"}, c.sparse()...), "--")
	for i := range dirs {
		args = append(args, ":(top,literal)"+dirs[i].Path)
	}
	if _, err := c.git(ctx, nil, args...); err != nil {
		return fmt.Errorf("take %s out of the index: %w", dirs[0].Path, err)
	}
	c.deps = append(c.deps, dirs...)
	c.depsErr = excludeDeps(c.repo.CommonDir, dirs)
	return nil
}

// unstageLarge takes out of the index the new files over --max-file-size
// among added (staged since the attempt's start by the agent's own git
// add, or committed by it): the commit's own add leaves out only the ones
// it stages itself (tooLarge), and one the agent staged was committed
// with the story. Only a file whose size on disk is over the limit costs
// git processes.
func (c *committer) unstageLarge(ctx context.Context, added []string) error {
	if c.maxNew <= 0 {
		return nil
	}
	base := c.linkBase
	if base == "" {
		base = "HEAD"
	}
	var large []largeFile
	for _, p := range added {
		if under(c.deps, p) != nil || git.IsState(p) {
			continue
		}
		size, ok := c.newLarge(ctx, p, base)
		if !ok {
			continue
		}
		f := largeFile{Path: p, Size: size}
		f.Committed, _ = c.repo.OK(ctx, "cat-file", "-e", "HEAD:"+p)
		if f.Committed && slices.Contains(c.pulled, p) {
			continue
		}
		large = append(large, f)
	}
	if len(large) == 0 {
		return nil
	}
	args := append(append([]string{"rm", "--cached", "-f", "-q", "--ignore-unmatch"}, c.sparse()...), "--")
	for _, f := range large {
		args = append(args, ":(top,literal)"+f.Path)
	}
	if _, err := c.git(ctx, nil, args...); err != nil {
		return fmt.Errorf("take %s out of the index: %w", large[0].Path, err)
	}
	c.stagedLarge = append(c.stagedLarge, large...)
	return nil
}

// leftLarge is every new file over --max-file-size the commit left out.
func (c *committer) leftLarge() []largeFile {
	return append(slices.Clip(c.stagedLarge), c.large...)
}

// registered reports whether .gitmodules names path as a submodule's.
func (c *committer) registered(ctx context.Context, path string) bool {
	paths, err := worktree.SubmodulePaths(ctx, c.repo.Root)
	return err == nil && slices.Contains(paths, path)
}

// cloneOf is the URL of the first remote of the repository whose git
// directory is gitDir, its user info taken out; "" when it has none (a
// git init's).
func cloneOf(ctx context.Context, repo *git.Repo, gitDir string) string {
	urls, _ := repo.Run(ctx, "config", "-f", filepath.Join(gitDir, "config"), "--get-regexp", `^remote\..*\.url$`)
	first, _, _ := strings.Cut(strings.TrimSpace(urls), "\n")
	if _, u, ok := strings.Cut(first, " "); ok {
		return withoutUserInfo(u)
	}
	return ""
}

// withoutUserInfo is a remote's URL with any user and password taken out
// (a token in https://TOKEN@host/...): the run prints it and logs it.
func withoutUserInfo(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return raw
}

// unstageState takes wiggum's own state back out of the index when `git add
// -A -v` (whose output is out) staged it: git ignores it through
// .git/info/exclude, but an agent can empty that file and a .gitignore can
// un-ignore it, and the state is never the tree's content. (An exclude
// pathspec cannot do it: git refuses one that names ignored files.)
//
// It takes out, too, a linked worktree of this repository (c.nested), and
// the repositories of their own takeNested deals with; again: one had its
// .git set aside, and its files are to be staged.
func (c *committer) unstageState(ctx context.Context, out string) (again bool, err error) {
	var spec strings.Builder
	var unlink []string
	c.large, c.nested = nil, nil
	lines := strings.Split(out, "\n")
	var added []string
	for _, line := range lines {
		if p, ok := strings.CutPrefix(line, "add '"); ok {
			added = append(added, strings.TrimSuffix(p, "'"))
		}
	}
	for _, p := range added {
		c.ignoreChanged = c.ignoreChanged || path.Base(p) == ".gitignore"
		c.touchedTest(p)
		c.wrote(p)
	}
	// The ones unstageDeps took out of the index already are not asked
	// about again.
	found := slices.DeleteFunc(depDirsOf(c.repo.Root, added), func(d depDir) bool {
		return slices.ContainsFunc(c.deps, func(o depDir) bool { return o.Path == d.Path })
	})
	if deps := newDepDirs(ctx, c.repo, "HEAD", found); len(deps) > 0 {
		// Excluded now: a set-aside's next add, and every later
		// commit, stage none of it again.
		c.deps = append(c.deps, deps...)
		c.depsErr = excludeDeps(c.repo.CommonDir, deps)
	}
	var removed []string
	for _, line := range lines {
		if p, ok := strings.CutPrefix(line, "remove '"); ok && strings.TrimSuffix(p, "'") != c.plan {
			c.staged++
			removed = append(removed, strings.TrimSuffix(p, "'"))
		}
		path, ok := strings.CutPrefix(line, "add '")
		path, found := strings.CutSuffix(path, "'")
		if !ok || !found {
			continue
		}
		staged := path != c.plan
		switch {
		case leftOut(c.deps, path):
			spec.WriteString(":(top,literal)" + path + "\x00")
			staged = false
		case git.IsState(path), c.tooLarge(ctx, path):
			spec.WriteString(":(top,literal)" + path + "\x00")
			staged = false
		case strings.HasSuffix(path, "/") && c.ownWorktree(strings.TrimSuffix(path, "/")):
			// git names a repository it adds as a gitlink with a slash.
			path = strings.TrimSuffix(path, "/")
			spec.WriteString(":(top,literal)" + path + "\x00")
			c.nested = append(c.nested, path)
			staged = false
		case strings.HasSuffix(path, "/"):
			path = strings.TrimSuffix(path, "/")
			if n, ok := c.takeNested(ctx, path, false); ok {
				if c.committedLinks[path] {
					// A gitlink the agent staged or committed: taken
					// out of the index (a reset would give back the
					// one its commit put in HEAD).
					unlink = append(unlink, ":(top,literal)"+path)
				} else {
					spec.WriteString(":(top,literal)" + path + "\x00")
				}
				c.repos = append(c.repos, n)
				again = again || n.Aside != ""
				if n.Aside == "" {
					c.leftRepos[path] = true
				}
				staged = false
			}
		}
		if staged {
			c.staged++
		}
	}
	for _, p := range removed {
		// A test moved by hand (mv, then git add -A) is removed and
		// added under the same name elsewhere: no deletion.
		moved := slices.ContainsFunc(added, func(a string) bool { return path.Base(a) == path.Base(p) })
		if !moved {
			c.deletedTest(p)
		}
	}
	if len(unlink) > 0 {
		args := append(append([]string{"rm", "--cached", "-f", "-q", "--ignore-unmatch"}, c.sparse()...), "--")
		if _, err := c.git(ctx, nil, append(args, unlink...)...); err != nil {
			return again, err
		}
	}
	if spec.Len() == 0 {
		return again, nil
	}
	_, err = c.git(ctx, []byte(spec.String()), "reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul")
	return again, err
}

// tooLarge reports whether path, just staged, is a new file larger than
// maxNew - an agent's download, a build's binary, a dump - and records it
// in c.large. Committed, it would stay in the history for good, and git
// hosts refuse a push that holds it (GitHub: 100 MB a file).
func (c *committer) tooLarge(ctx context.Context, path string) bool {
	if strings.HasSuffix(path, "/") {
		return false
	}
	size, ok := c.newLarge(ctx, path, "HEAD")
	if ok {
		c.large = append(c.large, largeFile{Path: path, Size: size})
	}
	return ok
}

// newLarge reports whether path, staged, is a file larger than maxNew
// that base (a commit, or HEAD) does not have, with its size on disk.
// Only the file's size on disk is read for every path; git is asked
// only about a large one: its staged size (git LFS stages a small
// pointer, which is committed) and whether base has it (a tracked file
// that grew is the person's, and committed).
func (c *committer) newLarge(ctx context.Context, path, base string) (int64, bool) {
	if c.maxNew <= 0 {
		return 0, false
	}
	fi, err := os.Lstat(filepath.Join(c.repo.Root, filepath.FromSlash(path)))
	if err != nil || !fi.Mode().IsRegular() || fi.Size() <= c.maxNew {
		return 0, false
	}
	size, err := c.repo.Line(ctx, "cat-file", "-s", ":"+path)
	if n, perr := strconv.ParseInt(size, 10, 64); err != nil || perr != nil || n <= c.maxNew {
		return 0, false
	}
	if ok, _ := c.repo.OK(ctx, "cat-file", "-e", base+":"+path); ok {
		return 0, false
	}
	return fi.Size(), true
}

// ownWorktree reports whether path, just staged, is a linked worktree of
// this same repository (a client's subagent worktree): its commits are
// this repository's already, on its own branch, and a gitlink to one of
// them in the story's commit would record nothing of its work. (A
// repository of its own, an agent's git init with commits, is recorded
// as a gitlink: see the worktree package's submodule backups.)
func (c *committer) ownWorktree(path string) bool {
	dir := filepath.Join(c.repo.Root, filepath.FromSlash(path))
	if fi, err := os.Lstat(filepath.Join(dir, ".git")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return git.InRepository(dir, c.repo.CommonDir)
}

// commitPath commits exactly path (the plan), whatever else is staged; ""
// when it did not change. A directory (an issues plan, where a done issue
// moves to a new, untracked file) or a file git does not know yet is added
// first; a tracked file needs no separate add.
func (c *committer) commitPath(ctx context.Context, message, path string, dir bool) (string, error) {
	spec := ":(top,literal)" + path
	args := commitCmd("-F", "-", "--", spec)
	if !dir {
		sha, err := c.run(ctx, args, message)
		var ge *git.Error
		if err == nil || !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "did not match any file") {
			return sha, err
		}
	}
	if _, err := c.git(ctx, nil, "add", "-A", "--", spec); err != nil {
		return "", fmt.Errorf("stage %s: %w", path, err)
	}
	return c.run(ctx, args, message)
}

// run runs a git command that commits, unattended, message on its stdin: with commit.gpgSign
// on git signs, and a signing program (or the user's hook) that asks for
// a passphrase would wait on the terminal for ever (git.RunUnattended).
//
// A hook that hangs (a network call, a tool that waits for a daemon) is
// stopped at c.timeout, with everything it started.
func (c *committer) run(ctx context.Context, args []string, message string) (string, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	if out, err := c.repo.RunUnattended(ctx, c.env, []byte(message), args...); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("commit: git commit - its hooks - ran longer than --timeout %s and was stopped", c.timeout)
		}
		var ge *git.Error
		if errors.As(err, &ge) && ge.Status() == 1 && strings.TrimSpace(ge.Stderr) == "" {
			if nothingToCommit(out) {
				// git says "nothing to commit" on stdout and exits 1.
				return "", nil
			}
			// A hook that failed without a word (git puts a hook's
			// output on stderr): not "nothing to commit", which left
			// the story's work uncommitted and its story done.
			return "", &silentHookError{ge}
		}
		return "", fmt.Errorf("commit: %w", err)
	}
	if sha := headFromFiles(c.repo.GitDir, c.repo.CommonDir); sha != "" {
		return sha[:shortID], nil
	}
	return c.repo.Line(ctx, "rev-parse", "--short", "HEAD")
}

// silentHookError is a commit a git hook failed without printing a word;
// it unwraps to git's error (exit status 1), which a formatter's second
// try reads.
type silentHookError struct{ err *git.Error }

func (e *silentHookError) Error() string {
	return "commit: a git hook (pre-commit or commit-msg) failed the commit without a word (git commit exited 1)"
}

func (e *silentHookError) Unwrap() error { return e.err }

// nothingToCommit reports whether git commit's output (on stdout, the
// status it prints when it exits 1) says there was nothing to commit.
func nothingToCommit(out string) bool {
	return strings.Contains(out, "nothing to commit") || strings.Contains(out, "nothing added to commit") || strings.Contains(out, "no changes added to commit")
}

// shortID is how much of a commit id the loop shows: git's own default.
const shortID = 7

var hexID = lazyre.New(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// headFromFiles reads the commit HEAD names from the files git keeps it in
// - HEAD in the working tree's git dir, its branch's loose ref in the common
// dir, which a commit has just written - without running git; "" when it
// is anywhere else (packed, a reftable, a symbolic ref chain), for the
// caller to ask git.
func headFromFiles(gitDir, commonDir string) string {
	head, err := statefile.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(string(head))
	if ref, ok := strings.CutPrefix(v, "ref: "); ok {
		if !strings.HasPrefix(ref, "refs/heads/") || strings.Contains(ref, "..") {
			return ""
		}
		data, err := statefile.ReadFile(filepath.Join(commonDir, filepath.FromSlash(ref)))
		if err != nil {
			return ""
		}
		v = strings.TrimSpace(string(data))
	}
	if !hexID().MatchString(v) {
		return ""
	}
	return v
}

// relPath is path relative to the repository root with forward slashes,
// for git pathspecs and prompts.
func relPath(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

func summarize(paths []string, n int) string {
	sorted := append([]string(nil), paths...)
	sort.Strings(sorted)
	if len(sorted) <= n {
		return strings.Join(sorted, ", ")
	}
	return strings.Join(sorted[:n], ", ") + fmt.Sprintf(" and %d more", len(sorted)-n)
}
