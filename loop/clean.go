package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// An agent that commits its own work - ralph prompts ask it to - commits
// what its git add -A finds: the node_modules or the virtual environment
// it installed, a build's 200 MB binary. The story's commit took them out
// of the tree again, but the agent's commit kept them in the history for
// good: every clone downloads them, and a git host refuses the push of a
// file over its limit (GitHub: 100 MB), so that none of the night's
// commits can be pushed until somebody rewrites them by hand.
//
// The agent's own commits are nobody else's yet: made during the attempt,
// on the run's branch, held by no other ref (the session refuses pushes).
// So before the attempt's pass is recorded they are made again without
// what no commit should hold - message, author and dates kept, as git
// filter-repo does; a commit left with no change of its own is dropped -
// and the commits as the agent made them are saved under
// refs/wiggum/backup/ first. Commits that are not only the attempt's (a
// merge among them, another ref holding them) are left as they are, and
// the run says why.

// agentCommit is one commit the agent made during its attempt, with the
// paths it added.
type agentCommit struct {
	sha     string
	parents []string
	adds    []agentAdd
}

// agentAdd is a file an agent's commit added.
type agentAdd struct {
	path, blob string
	link       bool // a gitlink (mode 160000): no blob, no size
}

// cleaned is what cleanHistory found in the agent's commits and did.
type cleaned struct {
	dirs  []depDir
	large []largeFile
	// state: wiggum's runtime state the agent's commits added (its
	// directory, "RuntimeDir/", and the lock files), which no commit the
	// loop lands may hold: git stops ignoring it when the agent empties
	// the exclude file or un-ignores .ralph/, and its git add -A takes it.
	state []string
	// rewritten and dropped: how many of the agent's commits were made
	// again, and how many of those were left with no change and dropped.
	rewritten, dropped int
	backup             string // the agent's commits as it made them
	why                string // why they were left as they are, or ""
	// pulled: what only commits a remote holds added - the attempt
	// pulled what others pushed, which is theirs to keep, in the history
	// and the tree - as said; pulledPaths: their paths.
	pulled, pulledPaths []string
}

// agentCommits lists the commits base..head, oldest first, with the paths
// each added. One git process.
func agentCommits(ctx context.Context, repo *git.Repo, base, head string) ([]agentCommit, error) {
	// Not --diff-filter=A: it leaves out the commits that add nothing
	// (and merges), and every commit is wanted here.
	out, err := repo.Run(ctx, "log", "--raw", "--no-abbrev", "-z", "--no-renames", "--format=%H %P", base+".."+head)
	if err != nil {
		return nil, err
	}
	var commits []agentCommit
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := strings.TrimLeft(fields[i], "\n")
		if f == "" {
			continue
		}
		if meta, ok := strings.CutPrefix(f, ":"); ok {
			if len(commits) == 0 || i+1 >= len(fields) {
				return nil, fmt.Errorf("git log: unexpected output %q", f)
			}
			// :MODE MODE SHA SHA STATUS
			m := strings.Fields(meta)
			i++
			if len(m) < 5 {
				return nil, fmt.Errorf("git log: unexpected output %q", f)
			}
			if m[4] == "A" {
				c := &commits[len(commits)-1]
				c.adds = append(c.adds, agentAdd{path: fields[i], blob: m[3], link: m[1] == "160000"})
			}
			continue
		}
		ids := strings.Fields(f)
		commits = append(commits, agentCommit{sha: ids[0], parents: ids[1:]})
	}
	slices.Reverse(commits)
	return commits, nil
}

// cleanHistory finds, in the commits the agent made during its attempt,
// the directories of installed packages and caches (depDirsOf) and the
// new files over --max-file-size that the attempt's start did not have,
// and makes those commits again without them. It costs nothing when the
// agent made no commit (the branch's ref file says so), and one git log,
// plus one cat-file for the added files' sizes, when it did.
func cleanHistory(ctx context.Context, st *checkpoint.State, base, branch string, maxNew int64) (cleaned, error) {
	repo := st.Repo
	ref := branch
	if ref == "" {
		ref = "HEAD"
	}
	if base == "" {
		return cleaned{}, nil
	}
	if v, ok := repo.RefValue(ref); ok && v == base {
		return cleaned{}, nil
	}
	head, err := repo.Head(ctx)
	if err != nil || head == "" || head == base {
		return cleaned{}, err
	}
	commits, err := agentCommits(ctx, repo, base, head)
	if err != nil || len(commits) == 0 {
		return cleaned{}, err
	}
	var cl cleaned
	cl.state = stateAdded(commits)
	if cl.dirs, cl.large, err = unwanted(ctx, repo, base, commits, maxNew); err != nil || len(cl.dirs)+len(cl.large)+len(cl.state) == 0 {
		return cleaned{state: cl.state}, err
	}
	// What came in with commits a remote holds - the agent pulled what
	// others pushed - is theirs: not rewritten, and left in the tree.
	// (A story's own branch on the server, refs/heads/wiggum/..., that
	// a shared run's claim published and a fetch brought back, holds
	// the attempt's commits: not others'.)
	own, err := repo.Run(ctx, "rev-list", head, "--not", base, "--exclude=*/wiggum/*", "--remotes")
	if err != nil {
		return cleaned{}, err
	}
	others := map[string]bool{}
	for _, c := range commits {
		others[c.sha] = true
	}
	for _, sha := range strings.Fields(own) {
		delete(others, sha)
	}
	cl.split(commits, others)
	if len(cl.dirs)+len(cl.large)+len(cl.state) == 0 {
		return cl, nil
	}
	chain, fork := ownTip(commits, others, head)
	if cl.why, err = notOnlyTheAgents(ctx, repo, commits, chain, &cl, ref); err != nil || cl.why != "" {
		return cl, err
	}
	drop := cl.paths()
	newHead, err := rewriteWithout(ctx, repo, fork, chain, drop, &cl)
	if err != nil {
		return cl, err
	}
	if cl.backup, err = st.BackupCommit(ctx, head); err != nil {
		return cl, fmt.Errorf("save the agent's commits: %w", err)
	}
	killpoint.At("history-saved")
	if len(cl.state) > 0 {
		// The agent's git add staged it too: taken out of the index
		// first, or the story's commit, made from it, would hold it
		// again (a kill after leaves the index clean for the resume).
		rm := append(append([]string{"rm", "-r", "--cached", "-f", "-q", "--ignore-unmatch"}, sparseFlag(repo)...), "--")
		for _, p := range cl.state {
			rm = append(rm, ":(top,literal)"+strings.TrimSuffix(p, "/"))
		}
		if _, err := repo.Run(ctx, rm...); err != nil {
			return cl, fmt.Errorf("take wiggum's runtime state out of the index: %w", err)
		}
	}
	args := []string{"update-ref", "-m", "wiggum: " + strings.Join(drop, ", ") + " taken out of the agent's commits"}
	if branch == "" {
		args = append(args, "--no-deref")
	}
	if _, err := repo.Run(ctx, append(args, ref, newHead, head)...); err != nil {
		return cl, fmt.Errorf("move %s to the rewritten commits: %w", checkpoint.BranchName(branch), err)
	}
	killpoint.At("history-cleaned")
	return cl, nil
}

// paths are what cl takes out of the commits, directories first.
func (cl cleaned) paths() []string {
	var out []string
	for _, d := range cl.dirs {
		out = append(out, d.name())
	}
	for _, f := range cl.large {
		out = append(out, f.Path)
	}
	return append(out, cl.state...)
}

// stateAdded lists wiggum's runtime state among what commits added: its
// runtime directory (as "RuntimeDir/") and each lock file, in that order.
func stateAdded(commits []agentCommit) []string {
	var dir bool
	var files []string
	for _, c := range commits {
		for _, a := range c.adds {
			switch {
			case isRuntimeState(a.path) && strings.HasPrefix(a.path, layout.RuntimeDir+"/"):
				dir = true
			case isRuntimeState(a.path) && !slices.Contains(files, a.path):
				files = append(files, a.path)
			}
		}
	}
	slices.Sort(files)
	if dir {
		files = append([]string{layout.RuntimeDir + "/"}, files...)
	}
	return files
}

// isRuntimeState reports whether the repository-relative path p is
// wiggum's runtime state: under its runtime directory, or the agent lock
// and its holder record (and their temporary files).
func isRuntimeState(p string) bool {
	return strings.HasPrefix(p, layout.RuntimeDir+"/") || strings.HasPrefix(p, layout.LockFile)
}

// unwanted picks, among what commits added, the directories of packages
// and caches and the files over maxNew that base did not track.
func unwanted(ctx context.Context, repo *git.Repo, base string, commits []agentCommit, maxNew int64) ([]depDir, []largeFile, error) {
	var paths []string
	blobOf := map[string]string{}
	for _, c := range commits {
		for _, a := range c.adds {
			if isRuntimeState(a.path) {
				continue // stateAdded's
			}
			paths = append(paths, a.path)
			if !a.link {
				blobOf[a.path] = a.blob
			}
		}
	}
	head, closeHeads := historyHeads(ctx, repo, blobOf)
	dirs := newDepDirs(ctx, repo, base, depDirsIn(head, paths))
	closeHeads()
	if maxNew <= 0 {
		return dirs, nil, nil
	}
	var blobs []agentAdd
	for _, c := range commits {
		for _, a := range c.adds {
			if !a.link && under(dirs, a.path) == nil && !isRuntimeState(a.path) {
				blobs = append(blobs, a)
			}
		}
	}
	if len(blobs) == 0 {
		return dirs, nil, nil
	}
	var in strings.Builder
	for _, a := range blobs {
		in.WriteString(a.blob + "\n")
	}
	out, err := repo.RunEnv(ctx, nil, []byte(in.String()), "cat-file", "--batch-check=%(objectsize)")
	if err != nil {
		return nil, nil, err
	}
	sizes := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(sizes) != len(blobs) {
		return nil, nil, fmt.Errorf("git cat-file: %d sizes for %d files", len(sizes), len(blobs))
	}
	var large []largeFile
	for i, a := range blobs {
		n, err := strconv.ParseInt(sizes[i], 10, 64)
		if err != nil || n <= maxNew || slices.ContainsFunc(large, func(f largeFile) bool { return f.Path == a.path }) {
			continue
		}
		if ok, _ := repo.OK(ctx, "cat-file", "-e", base+":"+a.path); ok {
			continue // the project's file, deleted and added again
		}
		large = append(large, largeFile{Path: a.path, Size: n, Committed: true})
	}
	return dirs, large, nil
}

// historyHeads reads a file's first bytes from the tree, or - when a
// later commit of the agent's deleted it, and the tree has no file there -
// from the blob blobOf says a commit added (a program built, committed,
// then removed is in the history all the same). Blobs over 64 MiB are not
// read (one over --max-file-size is taken out for its size). One git
// process, started at the first such file; close it.
func historyHeads(ctx context.Context, repo *git.Repo, blobOf map[string]string) (heads, func()) {
	tree := treeHeads(repo.Root)
	var cat *git.Cat
	read := func(p string, n int) ([]byte, bool) {
		if h, ok := tree(p, n); ok {
			return h, true
		}
		blob, ok := blobOf[p]
		if !ok {
			return nil, false
		}
		if _, err := os.Lstat(filepath.Join(repo.Root, filepath.FromSlash(p))); err == nil {
			return nil, false // there, and no regular file
		}
		if cat == nil {
			cat = repo.Cat(ctx)
		}
		if sizes, ok, err := cat.Sizes(blob); err != nil || ok && (len(sizes) != 1 || sizes[0] > 64<<20) {
			return nil, false
		}
		objs, err := cat.Read(blob)
		if err != nil || len(objs) != 1 || objs[0].ID == "" {
			return nil, false
		}
		c := objs[0].Data
		return c[:min(n, len(c))], true
	}
	return read, func() {
		if cat != nil {
			cat.Close()
		}
	}
}

// split moves, out of cl's directories and files, those that only
// commits of others (a remote holds them) added, into cl.pulled.
func (cl *cleaned) split(commits []agentCommit, others map[string]bool) {
	if len(others) == 0 {
		return
	}
	ownAdds := func(match func(string) bool) bool {
		for _, c := range commits {
			if !others[c.sha] && slices.ContainsFunc(c.adds, func(a agentAdd) bool { return match(a.path) }) {
				return true
			}
		}
		return false
	}
	cl.dirs = slices.DeleteFunc(cl.dirs, func(d depDir) bool {
		if ownAdds(d.holds) {
			return false
		}
		cl.pulled = append(cl.pulled, d.name())
		cl.pulledPaths = append(cl.pulledPaths, d.Path)
		return true
	})
	cl.state = slices.DeleteFunc(cl.state, func(sp string) bool {
		return !ownAdds(func(p string) bool { return dropped([]string{sp}, p) })
	})
	cl.large = slices.DeleteFunc(cl.large, func(f largeFile) bool {
		if ownAdds(func(p string) bool { return p == f.Path }) {
			return false
		}
		cl.pulled = append(cl.pulled, f.Path+" ("+megabytes(f.Size)+")")
		cl.pulledPaths = append(cl.pulledPaths, f.Path)
		return true
	})
}

// ownTip is the commits at the tip of head that are the attempt's own (no
// remote holds them) and each have one parent, oldest first, and the
// commit they were made on (fork).
func ownTip(commits []agentCommit, others map[string]bool, head string) (chain []agentCommit, fork string) {
	by := make(map[string]agentCommit, len(commits))
	for _, c := range commits {
		by[c.sha] = c
	}
	fork = head
	for {
		c, ok := by[fork]
		if !ok || others[fork] || len(c.parents) != 1 {
			break
		}
		chain = append(chain, c)
		fork = c.parents[0]
	}
	slices.Reverse(chain)
	return chain, fork
}

// notOnlyTheAgents says why the commits that added cl's directories and
// files are not the agent's alone to rewrite, or "": one of them is not
// in chain, the attempt's own commits at the tip - a merge came after it
// - or a ref other than ref (the run's branch) holds the oldest of chain
// - a branch or tag the agent made - and would keep them as they are
// (refs/wiggum/, wiggum's own saves, do not count). One git process.
func notOnlyTheAgents(ctx context.Context, repo *git.Repo, commits, chain []agentCommit, cl *cleaned, ref string) (string, error) {
	drop := cl.paths()
	for _, c := range commits {
		if slices.ContainsFunc(chain, func(o agentCommit) bool { return o.sha == c.sha }) ||
			!slices.ContainsFunc(c.adds, func(a agentAdd) bool { return dropped(drop, a.path) }) {
			continue
		}
		for _, m := range commits {
			if len(m.parents) > 1 {
				return fmt.Sprintf("%s is a merge, which brings in commits made elsewhere", m.sha[:shortID]), nil
			}
		}
		return fmt.Sprintf("%s is not at the tip of the branch", c.sha[:shortID]), nil
	}
	out, err := repo.Run(ctx, "for-each-ref", "--contains", chain[0].sha, "--format=%(refname)")
	if err != nil {
		return "", err
	}
	var others []string
	for _, r := range strings.Fields(out) {
		// wiggum's own saves (backups, checkpoints) keep what they
		// hold whatever the branch does; a story's branch on the
		// server is the attempt's, republished by its claim.
		if r != ref && !strings.HasPrefix(r, "refs/wiggum/") && !storyBranchOnServer(r) {
			others = append(others, r)
		}
	}
	if len(others) > 0 {
		verb := "holds"
		if len(others) > 1 {
			verb = "hold"
		}
		return fmt.Sprintf("%s %s them too", summarize(others, 3), verb), nil
	}
	return "", nil
}

// storyBranchOnServer reports whether ref is a remote-tracking ref of a
// story's branch (refs/remotes/NAME/wiggum/...).
func storyBranchOnServer(ref string) bool {
	rest, ok := strings.CutPrefix(ref, "refs/remotes/")
	_, branch, found := strings.Cut(rest, "/")
	return ok && found && strings.HasPrefix(branch, "wiggum/")
}

// rewriteWithout makes commits again on base without drop (paths from the
// root; a directory's ends in a slash), through an index of its own, and
// returns the new tip. A commit before the first that added any of drop
// is kept as it is; one left with nothing of its own is dropped.
func rewriteWithout(ctx context.Context, repo *git.Repo, base string, commits []agentCommit, drop []string, cl *cleaned) (string, error) {
	tmp, err := os.MkdirTemp("", "wiggum-clean-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	rm := append(append([]string{"rm", "-r", "--cached", "-f", "-q", "--ignore-unmatch"}, sparseFlag(repo)...), "--")
	for _, p := range drop {
		rm = append(rm, ":(top,literal)"+strings.TrimSuffix(p, "/"))
	}
	// git commit-tree signs only when told to, whatever commit.gpgSign
	// says.
	sign := ""
	if v, _ := repo.ConfigValue(ctx, "commit.gpgsign", "--bool"); v == "true" {
		sign = "-S"
	}
	parent, parentTree := base, ""
	started := false
	for _, c := range commits {
		if !started && !slices.ContainsFunc(c.adds, func(a agentAdd) bool { return dropped(drop, a.path) }) {
			parent = c.sha
			continue
		}
		if !started {
			started = true
			if parentTree, err = repo.Line(ctx, "rev-parse", parent+"^{tree}"); err != nil {
				return "", err
			}
		}
		if _, err := repo.RunEnv(ctx, env, nil, "read-tree", c.sha); err != nil {
			return "", err
		}
		if _, err := repo.RunEnv(ctx, env, nil, rm...); err != nil {
			return "", err
		}
		tree, err := repo.RunEnv(ctx, env, nil, "write-tree")
		if err != nil {
			return "", err
		}
		tree = strings.TrimSpace(tree)
		cl.rewritten++
		if tree == parentTree {
			cl.dropped++
			continue
		}
		if parent, err = recommit(ctx, repo, c.sha, tree, parent, sign); err != nil {
			return "", err
		}
		parentTree = tree
	}
	return parent, nil
}

// dropped reports whether p is one of drop, or in one of its directories.
func dropped(drop []string, p string) bool {
	for _, d := range drop {
		if p == d || strings.HasSuffix(d, "/") && strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// recommit makes commit again with tree on parent: its message, author
// and committer (names, emails and dates) as they were. The old
// signature cannot sign a new tree: with sign ("-S", commit.gpgSign on)
// git makes a new one with the repository's key.
func recommit(ctx context.Context, repo *git.Repo, commit, tree, parent, sign string) (string, error) {
	raw, err := repo.Run(ctx, "cat-file", "commit", commit)
	if err != nil {
		return "", err
	}
	header, message, _ := strings.Cut(raw, "\n\n")
	var env []string
	args := []string{"commit-tree", tree, "-p", parent, "-F", "-"}
	if sign != "" {
		args = append(args, sign)
	}
	for _, line := range strings.Split(header, "\n") {
		key, rest, _ := strings.Cut(line, " ")
		switch key {
		case "author", "committer":
			who := strings.ToUpper(key)
			lt, gt := strings.LastIndex(rest, " <"), strings.LastIndex(rest, "> ")
			if lt < 0 || gt < lt {
				return "", fmt.Errorf("commit %s: cannot read its %s %q", commit[:shortID], key, rest)
			}
			env = append(env, "GIT_"+who+"_NAME="+rest[:lt], "GIT_"+who+"_EMAIL="+rest[lt+2:gt], "GIT_"+who+"_DATE=@"+rest[gt+2:])
		case "encoding":
			args = append([]string{"-c", "i18n.commitEncoding=" + rest}, args...)
		}
	}
	out, err := repo.RunUnattended(ctx, env, []byte(message), args...)
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "sign") {
			return "", fmt.Errorf("git could not sign the rewritten commit (%s)", strings.TrimSpace(ge.Stderr))
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// cleanAgentCommits is cleanHistory for an attempt that passed, before its
// pass is recorded (a resume finds the pass's HEAD rewritten already),
// saying what it did. What it cannot rewrite stays as the agent committed
// it; the story's commit still takes it out of the tree. Wiggum's runtime
// state it could not take out is returned (stateKept), for the attempt to
// fail: no commit the loop lands may hold it.
func (e *executor) cleanAgentCommits(ctx context.Context) (stateKept string) {
	e.commit.pulled, stateKept = e.run.cleanAgentCommits(ctx, e.st, e.attemptHead, e.attemptBranch, map[string]any{"story": e.storyID, "worker": e.worker})
	return stateKept
}

// stateWhy is why wiggum's runtime state is taken out of the agent's
// commits.
const stateWhy = "which no commit may hold (the session's lock, checkpoint, logs and the agent's transcript: every later commit would carry them, and a push publish them)"

// cleanAgentCommits is cleanHistory of the commits made on branch since
// base, said; fields name the story (and worker) in its event. pulled:
// the paths that came with commits pulled from a remote, for the
// story's commit to leave (cleaned.pulled). stateKept: why wiggum's
// runtime state stays in the agent's commits, or "".
func (r *run) cleanAgentCommits(ctx context.Context, st *checkpoint.State, base, branch string, fields map[string]any) (pulled []string, stateKept string) {
	if t := r.opts.Timeout; t > 0 {
		// A signing program that waits for a person (a hardware key's
		// touch) is stopped, as the loop's own commits' are.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	cl, err := cleanHistory(ctx, st, base, branch, r.opts.MaxFileSize)
	if len(cl.pulled) > 0 {
		r.disp.printf("  %s came with the commits the attempt pulled from a remote: others' work, left in the history and the tree", strings.Join(cl.pulled, ", "))
	}
	if len(cl.dirs)+len(cl.large)+len(cl.state) == 0 && err == nil {
		return cl.pulledPaths, ""
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("it ran longer than --timeout %s (signing the new commits?) and was stopped", r.opts.Timeout)
	}
	var what []string
	for _, d := range cl.dirs {
		what = append(what, d.name())
	}
	for _, f := range cl.large {
		what = append(what, f.Path+" ("+megabytes(f.Size)+")")
	}
	state := strings.Join(cl.state, ", ")
	if len(what)+len(cl.state) == 0 {
		// Not even what they hold could be read: the commits stay.
		r.disp.printf("  the agent's commits could not be read for packages and large files (%v): they stay as it made them", err)
		return nil, ""
	}
	if w, ok := fields["worker"].(int); ok && w == 0 {
		delete(fields, "worker")
	}
	fields["paths"] = cl.paths()
	switch {
	case err != nil || cl.why != "":
		why := cl.why
		if err != nil {
			why = "wiggum could not rewrite them: " + err.Error()
		}
		if len(what) > 0 {
			r.disp.printf("  the commits made during the attempt put %s in the history, and they stay as they are: %s. The story's commit takes them out of the tree; rewriting those commits is left to you (git filter-repo)", strings.Join(what, ", "), why)
		}
		if len(cl.state) > 0 {
			stateKept = "the agent's commits put wiggum's runtime state (" + state + ") in the history, " + stateWhy + ", and wiggum could not make them again without it: " + why
		}
		fields["reason"] = why
		r.event("history_kept", fields)
	default:
		r.addBackup(cl.backup)
		how := fmt.Sprintf("made its %d commit(s) again without them, message, author and dates kept", cl.rewritten)
		if cl.dropped > 0 {
			how += fmt.Sprintf(" (%d of them held nothing else and are gone)", cl.dropped)
		}
		if len(what) > 0 {
			r.disp.printf("  the agent's commits put %s in the history, where every clone would carry it and git hosts refuse large files: %s; the commits as it made them are saved in %s", strings.Join(what, ", "), how, cl.backup)
		}
		if len(cl.state) > 0 {
			how := fmt.Sprintf("made its %d commit(s) again without it, message, author and dates kept", cl.rewritten)
			if cl.dropped > 0 {
				how += fmt.Sprintf(" (%d of them held nothing else and are gone)", cl.dropped)
			}
			r.disp.printf("  the agent's commits put wiggum's runtime state (%s) in the history, %s: %s; the commits as it made them are saved in %s", state, stateWhy, how, cl.backup)
		}
		fields["commits"], fields["dropped"], fields["backup"] = cl.rewritten, cl.dropped, cl.backup
		r.event("history_cleaned", fields)
	}
	return cl.pulledPaths, stateKept
}
