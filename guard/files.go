package guard

import (
	"path/filepath"
	"slices"
	"strings"
)

// files checks commands that delete, move or overwrite files.
func (w *walk) files(base string, rest []string) {
	switch base {
	case "rm", "rmdir", "unlink", "shred", "truncate", "srm", "trash", "trash-put", "gio":
		w.rm(base, rest)
	case "mv":
		for _, p := range operands(rest) {
			if why := w.protected(p); why != "" {
				w.g.verdict(Deny, "mv %s: %s", printable(p), why)
			} else if w.g.isGitDir(p) {
				w.g.verdict(Deny, "mv %s moves the repository's .git directory away", printable(p))
			}
		}
	case "ln":
		w.secondNames("ln", rest)
		w.copyTo(base, rest)
	case "cp", "install", "rsync":
		if base == "cp" && slices.ContainsFunc(rest, func(a string) bool {
			return a == "--symbolic-link" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 's')
		}) {
			w.secondNames("cp -s", rest) // links, not copies
		}
		w.copyTo(base, rest)
	case "tee", "sponge":
		for _, p := range operands(rest) {
			if why := w.protected(p); why != "" {
				w.g.verdict(Deny, "%s writes to %s: %s", base, printable(p), why)
			}
		}
	case "dd":
		for _, a := range rest {
			if p, ok := strings.CutPrefix(a, "of="); ok {
				if why := w.protected(p); why != "" {
					w.g.verdict(Deny, "dd writes to %s: %s", printable(p), why)
				}
			}
		}
	case "sed", "perl", "ruby":
		w.inPlace(base, rest)
	case "chmod", "chattr", "chown", "chgrp", "setfacl":
		w.chmod(base, rest)
	case "mkfifo", "mknod":
		w.specialFile(base, rest)
	}
}

// secondNames judges the sources of a link (ln, cp -s): a link to
// wiggum's state (or into .git) is a second name a file tool then writes
// through - ln -s .ralph/wiggum x, then an edit of x/checkpoint.json,
// overwrote the checkpoint record and the failed attempt's rollback could
// not be made; a hard link is the file itself.
func (w *walk) secondNames(prog string, rest []string) {
	ops := operands(rest)
	if len(ops) == 0 {
		return
	}
	sources := ops
	if len(ops) > 1 {
		sources = ops[:len(ops)-1]
	}
	for _, p := range sources {
		if why := w.protected(p); why != "" {
			w.g.verdict(Deny, "%s %s makes a second name for it: %s", prog, printable(p), why)
		} else if w.g.isGitDir(p) || w.g.inGitDir(p) != "" {
			w.g.verdict(Deny, "%s %s makes a second name for the repository's git data, which file tools would then write through", prog, printable(p))
		} else if dir := w.holdsPersonsConfig(p); dir != "" {
			w.g.verdict(Deny, "%s %s makes a second name in the tree for %s, which holds your own git config: a write through it (link/.gitconfig) replaces the file git reads in every repository; name the files you need instead", prog, printable(p), dir)
		}
	}
}

// holdsPersonsConfig returns the directory p names, in any directory the
// command may run in, when it holds the person's own git config - the
// home directory, its .config or .config/git, any directory above the
// home directory (/, /home) - or the config file itself (cp -s of it); or
// "".
func (w *walk) holdsPersonsConfig(p string) string {
	home := w.g.p.Home
	if home == "" {
		return ""
	}
	for _, d := range w.dirs {
		abs := w.g.resolve(d, p)
		if abs == "" {
			continue
		}
		if real, ok := followLinks(abs); ok {
			abs = real
		}
		for _, h := range []string{home, filepath.Join(home, ".config"), filepath.Join(home, ".config", "git"),
			filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
			if abs == h {
				return h
			}
			if real, ok := followLinks(h); ok && abs == real {
				return h
			}
		}
		if abs == "/" || strings.HasPrefix(home, abs+"/") {
			return abs // the home directory is under it
		}
	}
	return ""
}

// specialFile denies making a FIFO or a device where git opens it: inside
// .git (a config include.path names it, or info/exclude is one) or as a
// file git reads in the tree (.gitignore, .gitattributes). git blocks
// opening a FIFO until something writes to it: every git after it -
// wiggum's own status, commit and rollback - would wait forever.
func (w *walk) specialFile(base string, rest []string) {
	for _, p := range operands(rest) {
		if w.inRepoGitDir(p) || gitReadsName(filepath.Base(p)) {
			w.g.verdict(Deny, "%s %s makes a FIFO or a device file where git opens it, and every git that reads it - wiggum's own included - would wait forever; make it outside the repository (under /tmp)", base, printable(p))
		}
	}
}

// inRepoGitDir reports whether p, in any directory the command may run in,
// is the working tree's .git or inside it.
func (w *walk) inRepoGitDir(p string) bool {
	if strings.Contains(p, dynamic) {
		return false
	}
	if w.g.isGitDir(p) || w.g.inGitDir(p) != "" {
		return true
	}
	for _, d := range w.dirs {
		abs := w.g.resolve(d, p)
		if abs == "" || w.g.p.Root == "" {
			continue
		}
		if rel, err := filepath.Rel(w.g.p.Root, abs); err == nil && filepath.IsLocal(rel) && (w.g.isGitDir(rel) || w.g.inGitDir(rel) != "") {
			return true
		}
	}
	return false
}

// gitReadsName reports whether git opens a file of that name in the
// working tree on its own.
func gitReadsName(name string) bool {
	switch name {
	case ".gitignore", ".gitattributes", ".gitmodules", ".mailmap":
		return true
	}
	return false
}

// operands are the arguments that are not options.
func operands(rest []string) []string {
	var ops []string
	dash := false
	for _, a := range rest {
		if !dash && a == "--" {
			dash = true
			continue
		}
		if !dash && strings.HasPrefix(a, "-") && a != "-" {
			continue
		}
		ops = append(ops, a)
	}
	return ops
}

// rm denies deleting protected state or .git, and recursive deletes of
// the working tree, the home directory or the root.
func (w *walk) rm(base string, rest []string) {
	recursive := false
	for _, a := range rest {
		if a == "--" {
			break
		}
		if a == "--recursive" || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a, "rR")) {
			recursive = true
		}
	}
	for _, p := range operands(rest) {
		if why := w.protected(p); why != "" {
			w.g.verdict(Deny, "%s %s: %s", base, printable(p), why)
			continue
		}
		if w.g.isGitDir(p) {
			w.g.verdict(Deny, "%s %s deletes the repository's .git directory, with its history and wiggum's backups under %s", base, printable(p), w.g.p.RefNamespace)
			continue
		}
		if recursive {
			w.rmTree(base, p)
		}
	}
}

// copyTo denies copying or linking over protected state.
func (w *walk) copyTo(base string, rest []string) {
	ops := operands(rest)
	for i, a := range rest {
		if (a == "-t" || a == "--target-directory") && i+1 < len(rest) {
			ops = append(ops, rest[i+1])
		}
		if dir, ok := strings.CutPrefix(a, "--target-directory="); ok {
			ops = append(ops, dir)
		}
	}
	if len(ops) > 0 {
		dst := ops[len(ops)-1]
		if why := w.protected(dst); why != "" {
			w.g.verdict(Deny, "%s over %s: %s", base, printable(dst), why)
		}
		if base == "rsync" && slices.ContainsFunc(rest, func(a string) bool { return strings.HasPrefix(a, "--del") }) {
			// --delete removes from dst whatever the source lacks.
			if w.g.isGitDir(dst) {
				w.g.verdict(Deny, "rsync --delete into %s deletes the repository's .git directory's contents", printable(dst))
			}
			w.rmTree("rsync --delete", dst)
		}
	}
}

// inPlace denies sed -i (and perl/ruby -i) rewriting protected state.
func (w *walk) inPlace(base string, rest []string) {
	inPlace := false
	for _, a := range rest {
		if a == "--in-place" || strings.HasPrefix(a, "--in-place=") || (len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'i')) {
			inPlace = true
		}
	}
	if !inPlace {
		return
	}
	for _, p := range operands(rest) {
		if why := w.protected(p); why != "" {
			w.g.verdict(Deny, "%s -i rewrites %s: %s", base, printable(p), why)
		}
	}
}

// chmod denies changing the mode or owner of protected files (chmod -x on
// a hook switches it off); only adding permissions (+x) is allowed.
func (w *walk) chmod(base string, rest []string) {
	ops := operands(rest)
	if base == "chmod" {
		// A mode may look like an option: chmod -x FILE.
		ops = nil
		for _, a := range rest {
			if !strings.HasPrefix(a, "-") || (len(a) > 1 && strings.Trim(a[1:], "rwxXst") == "") {
				ops = append(ops, a)
			}
		}
	}
	if len(ops) < 2 {
		return
	}
	mode := ops[0]
	if base == "chmod" && strings.Contains(mode, "+") && !strings.ContainsAny(mode, "-=") {
		return
	}
	for _, p := range ops[1:] {
		if why := w.protected(p); why != "" {
			w.g.verdict(Deny, "%s %s %s: %s", base, mode, printable(p), why)
		}
	}
}

// protected is protectedState for a path as the command sees it: also
// resolved against the directories the script changes into, so
// "cd .git/hooks && rm pre-push" is caught.
func (w *walk) protected(p string) string {
	if why := w.g.protectedState(p); why != "" || p == "" {
		return why
	}
	if why := w.g.gitData(p); why != "" || w.g.p.Root == "" {
		return why
	}
	for _, d := range w.dirs {
		abs := w.g.resolve(d, p)
		if abs == "" {
			continue
		}
		if why := w.g.linkedConfigWhy(abs); why != "" {
			return why
		}
		if rel, err := filepath.Rel(w.g.p.Root, abs); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			if why := w.g.protectedState(rel); why != "" {
				return why
			}
			if why := w.g.gitData(rel); why != "" {
				return why
			}
		}
	}
	return ""
}

// rmTree denies a recursive delete of /, the home directory, the working
// tree or one of their ancestors, and asks when the target is unknown.
func (w *walk) rmTree(base, p string) {
	if p == dynamic {
		w.g.verdict(Ask, "%s -r of a path only known at run time: if it is empty or the home directory this deletes far too much; spell the path out", base)
		return
	}
	target := strings.TrimSuffix(strings.TrimSuffix(p, "*"), "/")
	if target == "" && strings.HasPrefix(p, "/") {
		target = "/"
	}
	dirs := w.dirs
	if len(dirs) > 1 {
		// The command changes directory first; the rm runs over there.
		dirs = dirs[1:]
	}
	for _, dir := range dirs {
		var abs string
		if target == "" { // "*" in dir
			abs = dir
		} else {
			abs = w.g.resolve(dir, target)
		}
		if abs == "" {
			if !filepath.IsAbs(target) && !strings.HasPrefix(target, "~") && (target == "." || target == ".." || strings.HasPrefix(target, "../") || target == "") {
				w.g.verdict(Ask, "%s -r %s from a directory wiggum's guard cannot know; spell the path out", base, printable(p))
			}
			continue
		}
		if what := w.g.precious(abs); what != "" {
			w.g.verdict(Deny, "%s -r %s deletes %s", base, printable(p), what)
			return
		}
	}
}

// precious names abs when deleting it recursively would destroy the
// machine's root, the home directory or the working tree.
func (g *guard) precious(abs string) string {
	within := func(child, parent string) bool {
		if parent == "" {
			return false
		}
		rel, err := filepath.Rel(child, parent)
		return err == nil && (rel == "." || !strings.HasPrefix(rel, ".."))
	}
	switch {
	case abs == "/":
		return "the whole file system"
	case g.p.Home != "" && within(abs, g.p.Home):
		return "the home directory " + g.p.Home
	case g.p.Root != "" && within(abs, g.p.Root):
		return "the whole working tree " + g.p.Root + " (and wiggum's state and checkpoint in it)"
	}
	return ""
}
