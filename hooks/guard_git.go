package hooks

import (
	"slices"
	"strings"
)

// gitValueOpts are git's global options that take a separate value.
var gitValueOpts = map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true, "--config-env": true, "--super-prefix": true, "--list-cmds": true}

// git checks one git invocation (the arguments after "git").
func (w *walk) git(args []string) {
	otherDir := false
	i := 0
	for i < len(args) {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		if gitValueOpts[name] && !hasValue && i+1 < len(args) {
			value = args[i+1]
			i++
		}
		switch name {
		case "-C", "--git-dir", "--work-tree":
			if !w.sameTree(value) {
				otherDir = true
			}
		case "-c", "--config-env":
			key, _, _ := strings.Cut(value, "=")
			key = strings.ToLower(key)
			if strings.HasPrefix(key, "alias.") {
				w.g.verdict(Ask, "git -c %s defines a git alias inline; wiggum's guard cannot see what it runs", key)
			}
			if key == "core.hookspath" {
				w.g.verdict(Deny, "git -c core.hooksPath=... bypasses wiggum's git hooks (the commit journal and push guard); run git without it")
			}
		}
		i++
	}
	if i >= len(args) {
		return
	}
	sub, rest := args[i], args[i+1:]
	if strings.Contains(sub, dynamic) {
		w.g.verdict(Ask, "the git subcommand is only known at run time, so wiggum's guard cannot tell what it does")
		return
	}
	writesRefs := false
	switch sub {
	case "push", "send-pack", "http-push":
		w.g.verdict(Deny, "git %s is not allowed during a wiggum session: commit locally and leave publishing to the person running the loop (set WIGGUM_ALLOW_PUSH=1 outside the agent if a push is really wanted)", sub)
	case "merge", "pull":
		w.merge(sub, rest, otherDir)
	case "reset":
		if slices.Contains(rest, "--hard") {
			w.g.verdict(Deny, "git reset --hard throws away uncommitted work and commits wiggum may not be able to recover; to return to the checkpoint run `wiggum rollback` (it refuses when unsafe and saves what it discards), or use `git reset --soft`/`git restore FILE` for a narrower undo")
		}
	case "clean":
		force, dry := false, false
		for _, a := range beforeDashDash(rest) {
			switch {
			case a == "--force":
				force = true
			case a == "--dry-run":
				dry = true
			case len(a) > 1 && a[0] == '-' && a[1] != '-':
				force = force || strings.ContainsRune(a, 'f')
				dry = dry || strings.ContainsRune(a, 'n')
			}
		}
		if force && !dry {
			w.g.verdict(Deny, "git clean -f deletes untracked files for good (wiggum's backups cannot save them afterwards); delete the specific files you created with rm instead, or preview with git clean -n")
		}
	case "checkout":
		opts, paths := splitDashDash(rest)
		for _, a := range opts {
			if a == "-f" || a == "--force" {
				w.g.verdict(Deny, "git checkout --force throws away uncommitted changes; commit or stash them first")
			}
		}
		if paths == nil {
			// "git checkout ." is a pathspec; "git checkout main" a branch.
			for j, a := range opts {
				if strings.HasPrefix(a, "-") {
					if (a == "-b" || a == "-B") && j+1 < len(opts) {
						w.branches = append(w.branches, opts[j+1])
					}
					continue
				}
				if w.wholeTree(a) {
					paths = append(paths, a)
				} else {
					w.branches = append(w.branches, a)
				}
				break
			}
		}
		for _, p := range paths {
			if w.wholeTree(p) {
				w.g.verdict(Deny, "git checkout %s discards every uncommitted change in the working tree; restore only the files you mean to (git checkout -- FILE), or let `wiggum rollback` return to the checkpoint", printable(p))
				break
			}
		}
	case "restore":
		opts, paths := splitDashDash(rest)
		staged, worktree := false, false
		var operands []string
		for j := 0; j < len(opts); j++ {
			a := opts[j]
			switch {
			case a == "--staged" || a == "-S":
				staged = true
			case a == "--worktree" || a == "-W":
				worktree = true
			case a == "-s" || a == "--source":
				j++
			case strings.HasPrefix(a, "-"):
				if len(a) > 1 && a[1] != '-' {
					staged = staged || strings.ContainsRune(a, 'S')
					worktree = worktree || strings.ContainsRune(a, 'W')
				}
			default:
				operands = append(operands, a)
			}
		}
		if !staged || worktree {
			for _, p := range append(operands, paths...) {
				if w.wholeTree(p) {
					w.g.verdict(Deny, "git restore %s discards every uncommitted change in the working tree; restore only the files you mean to, or let `wiggum rollback` return to the checkpoint", printable(p))
					break
				}
			}
		}
	case "switch":
		for j, a := range rest {
			switch {
			case a == "--discard-changes" || a == "-f" || a == "--force":
				w.g.verdict(Deny, "git switch %s throws away uncommitted changes; commit or stash them first", a)
			case (a == "-c" || a == "-C") && j+1 < len(rest):
				w.branches = append(w.branches, rest[j+1])
			case !strings.HasPrefix(a, "-"):
				w.branches = append(w.branches, a)
			}
		}
	case "branch":
		writesRefs = true
		for _, a := range beforeDashDash(rest) {
			switch {
			case a == "--force" || (a == "--delete" && (slices.Contains(rest, "--force") || slices.Contains(rest, "-f"))):
				w.g.verdict(Deny, "git branch %s deletes or moves a branch that may hold unmerged work; use git branch -d (refuses unmerged branches) or leave branches to the loop", a)
			case len(a) > 1 && a[0] == '-' && a[1] != '-' && (strings.ContainsAny(a, "DMC") || strings.ContainsRune(a, 'f')):
				w.g.verdict(Deny, "git branch %s deletes or moves a branch that may hold unmerged work; use git branch -d (refuses unmerged branches) or leave branches to the loop", a)
			}
		}
	case "update-ref":
		w.g.verdict(Deny, "git update-ref rewrites refs directly, behind the checkpoint's back; use normal commits, and `wiggum rollback`/`wiggum recover` to move between saved states")
	case "commit":
		if commitNoVerify(rest) {
			w.g.verdict(Deny, "git commit --no-verify skips the repository's hooks; fix what the hooks report and commit normally")
		}
	case "filter-branch", "filter-repo":
		w.g.verdict(Deny, "git %s rewrites history the checkpoint and journal refer to; not allowed during a wiggum session", sub)
	case "config":
		for _, a := range rest {
			if strings.EqualFold(a, "core.hooksPath") && (len(rest) > 1) && !slices.Contains(rest, "--get") && !slices.Contains(rest, "--list") && !slices.Contains(rest, "-l") {
				w.g.verdict(Deny, "changing core.hooksPath disables wiggum's git hooks (the commit journal and push guard)")
			}
		}
	case "tag", "replace", "symbolic-ref", "reflog", "fetch", "notes", "pack-refs":
		writesRefs = true
	}
	if writesRefs {
		for _, a := range rest {
			if strings.Contains(a, "refs/wiggum") {
				w.g.verdict(Deny, "git %s would touch refs/wiggum/, where wiggum keeps the backups of everything a rollback discarded; use `wiggum recover` to list, restore or prune them", sub)
			}
		}
	}
}

// merge denies merging into the main or default branch.
func (w *walk) merge(sub string, rest []string, otherDir bool) {
	for _, a := range rest {
		if a == "--abort" || a == "--quit" || a == "--continue" {
			return
		}
	}
	for _, d := range w.dirs[1:] {
		if !w.sameTree(d) {
			otherDir = true // the script changed into a directory the guard does not know
		}
	}
	if otherDir {
		w.g.verdict(Ask, "git %s in another directory: wiggum's guard cannot tell which branch it changes", sub)
		return
	}
	candidates := append([]string{w.g.in.Branch}, w.branches...)
	for _, b := range candidates {
		if b != "" && slices.Contains(w.g.in.Protected, b) {
			w.g.verdict(Deny, "git %s into %s is not allowed during a wiggum session: %s is the main branch; commit on your story branch and leave merging to the loop or the user", sub, b, b)
			return
		}
	}
	if w.g.in.Branch == "" && len(w.branches) == 0 {
		w.g.verdict(Ask, "git %s: wiggum's guard cannot tell which branch is checked out, and merging into the main branch is not allowed during a session", sub)
	}
}

// sameTree reports whether git -C DIR stays in the working tree the guard
// knows about.
func (w *walk) sameTree(dir string) bool {
	if w.g.in.Root == "" {
		return false
	}
	abs := w.g.resolve(w.g.in.Cwd, dir)
	if abs == "" {
		return false
	}
	rel := strings.TrimPrefix(abs, w.g.in.Root)
	return abs == w.g.in.Root || (len(rel) < len(abs) && strings.HasPrefix(rel, "/"))
}

// wholeTree reports whether a pathspec names the whole working tree.
func (w *walk) wholeTree(p string) bool {
	switch p {
	case ".", "./", ":/", ":/*", "*", ":(top)", ":(top).", "./*", ":":
		return true
	}
	if w.g.in.Root != "" {
		for _, dir := range w.dirs {
			if dir == w.g.in.Root && (p == "." || p == "*") {
				return true
			}
		}
		if abs := w.g.resolve(w.g.in.Cwd, p); abs != "" && abs == w.g.in.Root {
			return true
		}
	}
	return false
}

// commitNoVerify finds --no-verify or -n, also inside clusters like -nm.
func commitNoVerify(args []string) bool {
	const valueOpts = "mFcCtuS"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case a == "--no-verify":
			return true
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && commitLongValue[a] {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				if a[j] == 'n' {
					return true
				}
				if strings.IndexByte(valueOpts, a[j]) >= 0 {
					if j == len(a)-1 && a[j] != 'u' && a[j] != 'S' {
						i++
					}
					break
				}
			}
		}
	}
	return false
}

var commitLongValue = map[string]bool{"--message": true, "--file": true, "--author": true, "--date": true, "--template": true, "--reuse-message": true, "--reedit-message": true, "--fixup": true, "--squash": true, "--trailer": true, "--cleanup": true, "--pathspec-from-file": true}

func beforeDashDash(args []string) []string {
	opts, _ := splitDashDash(args)
	return opts
}

// splitDashDash splits args at "--"; paths is nil when there is none.
func splitDashDash(args []string) (opts, paths []string) {
	for i, a := range args {
		if a == "--" {
			return args[:i], append([]string{}, args[i+1:]...)
		}
	}
	return args, nil
}
