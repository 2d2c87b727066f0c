package guard

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// Why the policy's paths must not be touched.
const (
	stateWhy = "that is wiggum's session state (agent lock, checkpoint, journal); use wiggum commands (`wiggum status`, `wiggum rollback`) instead"
	hookWhy  = "that is one of wiggum's git hooks (the commit journal and the push guard); `wiggum uninstall --git` removes them if that is really wanted"
)

// protectedState explains why p must not be written, moved or deleted, or
// returns "" when p is none of the policy's state, hooks or refs. Globs
// count when they could match.
func (g *guard) protectedState(p string) string {
	if p == "" {
		return ""
	}
	if ns := strings.TrimSuffix(g.p.RefNamespace, "/"); ns != "" && strings.Contains(p, ns) {
		return g.p.RefNamespace + " holds wiggum's backups of everything a rollback discarded; list them with `wiggum recover`"
	}
	parts := strings.Split(filepath.ToSlash(p), "/")
	for _, sp := range g.p.StatePaths {
		if touches(parts, strings.Split(strings.Trim(sp, "/"), "/"), 1) {
			return stateWhy
		}
	}
	for _, h := range g.p.HookFiles {
		// The hooks directory and the hook count, not all of .git.
		prot := strings.Split(strings.Trim(h, "/"), "/")
		if touches(parts, prot, max(len(prot)-1, 1)) {
			return hookWhy
		}
	}
	return ""
}

// personsConfigWhy explains why the agent must not write abs, or "": the
// person's own git config (userGitConfigWhy) or Go's environment file.
func (g *guard) personsConfigWhy(abs string) string {
	if why := g.userGitConfigWhy(abs); why != "" {
		return why
	}
	if abs == "" || g.p.Home == "" {
		return ""
	}
	abs = filepath.Clean(abs)
	if abs == GoEnvFile(g.p.Home) || abs == filepath.Join(g.p.Home, ".config", "go", "env") {
		return goEnvWhy
	}
	return ""
}

// linkedConfigWhy is personsConfigWhy for where abs really leads: the
// symbolic links on its way resolved (those that exist), so a link in the
// tree to the home directory (ln -s "$HOME" hl, then a write to
// hl/.gitconfig) is judged as the file it writes. The home directory's own
// links are resolved alike.
func (g *guard) linkedConfigWhy(abs string) string {
	if why := g.personsConfigWhy(abs); why != "" || g.p.Home == "" || !filepath.IsAbs(abs) {
		return why
	}
	real, ok := followLinks(abs)
	if !ok || real == filepath.Clean(abs) {
		return ""
	}
	if homeR, ok := followLinks(g.p.Home); ok && homeR != filepath.Clean(g.p.Home) {
		if rel, err := filepath.Rel(homeR, real); err == nil && filepath.IsLocal(rel) {
			real = filepath.Join(g.p.Home, rel)
		}
	}
	if why := g.personsConfigWhy(real); why != "" {
		return "it leads through a symbolic link to " + real + ": " + why
	}
	return ""
}

// goEnvWhy is why neither go env -w nor a write to Go's environment file
// is allowed.
const goEnvWhy = "that is your own Go environment (go env -w writes it), read by every go command and kept after the session (GOFLAGS=-run=^$ there makes every go test run nothing, wiggum's gate's included); set the variable for one command instead (GOFLAGS=... go test ./...)"

// GoEnvFile is the file `go env -w` writes and every go command reads
// (go env GOENV): $GOENV, else go/env in the user's config directory as
// os.UserConfigDir finds it, with home as the home directory; "" when
// there is none (GOENV=off, no config directory).
func GoEnvFile(home string) string {
	if f := os.Getenv("GOENV"); f != "" {
		if f == "off" {
			return ""
		}
		return f
	}
	var dir string
	switch runtime.GOOS {
	case "windows":
		dir = os.Getenv("AppData")
	case "darwin", "ios":
		if home != "" {
			dir = filepath.Join(home, "Library", "Application Support")
		}
	default:
		if dir = os.Getenv("XDG_CONFIG_HOME"); dir == "" && home != "" {
			dir = filepath.Join(home, ".config")
		}
	}
	if !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, "go", "env")
}

// userGitConfigWhy explains why the agent must not write abs, or "": the
// user's own git config and the files it names by default (the global
// ignore and attributes files) are read by git in every repository, and
// outlive the session - a core.fsmonitor or core.hooksPath there runs a
// command in wiggum's own git, or turns wiggum's hooks off, everywhere;
// an ignore pattern leaves the story's files out of its commit. git
// config --global is judged as a git command; this is the file itself.
func (g *guard) userGitConfigWhy(abs string) string {
	if abs == "" || g.p.Home == "" {
		return ""
	}
	abs = filepath.Clean(abs)
	dir, name := filepath.Split(abs)
	dir = filepath.Clean(dir)
	mine := g.homeGitConfig(abs)
	if name == "ignore" || name == "attributes" || name == "config" {
		// Under the XDG config directory: its default and the one set.
		xdg := os.Getenv("XDG_CONFIG_HOME")
		mine = mine || dir == filepath.Join(g.p.Home, ".config", "git") || (xdg != "" && dir == filepath.Join(xdg, "git"))
	}
	if !mine {
		return ""
	}
	return "that is your own git config, read by git in every repository and kept after the session (a setting there runs in wiggum's own git commands, or turns its hooks off, or hides the story's files); use git config in the repository instead"
}

// homeGitConfig reports whether abs (clean) is one of the user's git
// config files in the home directory: ~/.gitconfig or
// ~/.config/git/config.
func (g *guard) homeGitConfig(abs string) bool {
	return g.p.Home != "" && (abs == path.Join(g.p.Home, ".gitconfig") || abs == path.Join(g.p.Home, ".config/git/config"))
}

// touches reports whether the path parts name the protected path prot, a
// file under it, or a directory holding it: somewhere in parts a run of
// at least least components matches prot's components from its first, up
// to the end of either. The path's components may be globs; "" and "."
// are skipped.
func touches(parts, prot []string, least int) bool {
	for i, part := range parts {
		if ok, _ := path.Match(part, prot[0]); !ok || part == "" {
			continue
		}
		j := 1
		for _, next := range parts[i+1:] {
			if j == len(prot) {
				break
			}
			if next == "" || next == "." {
				continue
			}
			if ok, _ := path.Match(next, prot[j]); !ok {
				j = -1
				break
			}
			j++
		}
		if j >= least {
			return true
		}
	}
	return false
}

// isGitDir reports whether p names the working tree's .git (or a glob that
// matches it) rather than some other repository's.
func (g *guard) isGitDir(p string) bool {
	parts := strings.Split(filepath.ToSlash(strings.TrimRight(p, "/")), "/")
	last := parts[len(parts)-1]
	if ok, _ := path.Match(last, ".git"); !ok || strings.Contains(p, dynamic) {
		return false
	}
	if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~") {
		return true
	}
	return g.p.Root != "" && filepath.Clean(p) == filepath.Join(g.p.Root, ".git")
}

// inGitDir returns what p names inside the working tree's .git (refs,
// objects/ab, HEAD), or "" when p is not inside it.
func (g *guard) inGitDir(p string) string {
	slash := filepath.ToSlash(p)
	if g.p.Root != "" && filepath.IsAbs(p) {
		if rel, err := filepath.Rel(g.p.Root, p); err == nil && filepath.IsLocal(rel) {
			slash = filepath.ToSlash(rel)
		}
	}
	slash = strings.TrimPrefix(slash, "./")
	top, rest, ok := strings.Cut(slash, "/")
	if !ok || strings.Trim(rest, "/") == "" || filepath.IsAbs(top) || strings.HasPrefix(top, "~") || !g.isGitDir(top) {
		return ""
	}
	return strings.Trim(rest, "/")
}

// gitData explains why deleting or moving p - inside .git - destroys the
// repository's history, or returns "". A lock file (a git killed
// mid-command leaves one), a hook that is not wiggum's (protectedState
// judges those) and info/ (its exclude and attributes) are the agent's
// to delete.
func (g *guard) gitData(p string) string {
	in := g.inGitDir(p)
	if in == "" || strings.HasSuffix(in, ".lock") {
		return ""
	}
	if top, name, _ := strings.Cut(in, "/"); top == "hooks" || top == "info" {
		if top == "hooks" {
			return g.projectHook(name)
		}
		return ""
	}
	return "that is git's own data inside .git (its history, refs or index); use git commands instead"
}

// projectHook explains why the repository's git hook name (in .git/hooks)
// must not be removed, disabled or rewritten - it was there before the
// agent's session began (Policy.Preexisting): the person's, or the
// project's hook manager's - or returns "". Doing so skips the checks the
// hook makes, as --no-verify and HUSKY=0 would, and for every later
// commit of the person's too, unseen (nothing under .git is in a diff).
// name "" (the hooks directory) or a glob stands for every hook git runs
// that it covers. A hook the agent made during its session, a sample, and
// a name only known at run time are the agent's.
func (g *guard) projectHook(name string) string {
	if strings.Contains(name, "/") || strings.HasSuffix(name, ".sample") || strings.Contains(name, dynamic) || g.p.Preexisting == nil || g.p.Root == "" {
		return ""
	}
	names := []string{name}
	if name == "" || strings.ContainsAny(name, "*?[") {
		names = nil
		for _, h := range gitHookNames {
			if ok, _ := path.Match(name, h); ok || name == "" {
				names = append(names, h)
			}
		}
	}
	for _, h := range names {
		if g.p.Preexisting(filepath.Join(g.p.Root, ".git", "hooks", h)) {
			what := "that is"
			if h != name {
				what = "that holds"
			}
			return what + " this repository's own " + h + " git hook, there before the session: removing, disabling or rewriting it skips the checks it makes on every commit, as --no-verify would - it is the person's to change"
		}
	}
	return ""
}

// resolvedIn is abs with the symbolic links on its way resolved - a link
// to a directory that does not exist yet too (ln -s .ralph/wiggum x
// before wiggum made it), the rest of the path then taken as it is -
// relative to root when it lies inside; "" when it lies outside, or a
// link loops.
func resolvedIn(abs, root string) string {
	if root == "" || !filepath.IsAbs(abs) {
		return ""
	}
	r, ok := followLinks(abs)
	if !ok {
		return ""
	}
	rootR, ok := followLinks(root)
	if !ok {
		rootR = root
	}
	rel, err := filepath.Rel(rootR, r)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return rel
}

// followLinks resolves the symbolic links of an absolute path one part at
// a time, as the kernel does on open; the parts after the first that does
// not exist are taken literally. false after 40 links (a loop).
func followLinks(abs string) (string, bool) {
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(abs), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		next := filepath.Join(cur, parts[0])
		fi, err := os.Lstat(next)
		if err != nil {
			return filepath.Join(append([]string{cur}, parts...)...), true
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur, parts = next, parts[1:]
			continue
		}
		if hops++; hops > 40 {
			return "", false
		}
		to, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(cur, to)
		}
		parts = append(strings.Split(strings.TrimPrefix(filepath.Clean(to), "/"), "/"), parts[1:]...)
		cur = "/"
	}
	return cur, true
}

// gitHookNames are the hooks git runs (githooks(5)).
var gitHookNames = []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout",
	"pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "post-index-change"}

// CheckEdit decides whether a file tool (an agent's Edit or Write) may
// write file, absolute or relative to p.Cwd: protected state and git's data
// inside .git are denied, as the shell rules deny them to rm, mv and >.
func CheckEdit(file string, p Policy) Decision {
	return p.worded(checkEdit(file, p))
}

func checkEdit(file string, p Policy) Decision {
	g := &guard{p: p}
	target := filepath.Clean(file)
	if !filepath.IsAbs(target) {
		target = filepath.Join(p.Cwd, file)
	}
	abs := target
	if p.Root != "" {
		if rel, err := filepath.Rel(p.Root, target); err == nil && !strings.HasPrefix(rel, "..") {
			target = rel
		}
	}
	if why := g.linkedConfigWhy(abs); why != "" {
		return Decision{Deny, fmt.Sprintf("writing %s is not allowed during a wiggum session: %s", file, why)}
	}
	if why := g.protectedState(target); why != "" {
		return Decision{Deny, fmt.Sprintf("writing %s is not allowed during a wiggum session: %s", file, why)}
	}
	// Through a symbolic link (link -> .ralph/wiggum, or a link to a
	// file there) the tool writes where the link points: that is judged.
	if real := resolvedIn(abs, p.Root); real != "" && real != target {
		if d := checkEdit(filepath.Join(p.Root, real), p); d.Action != Allow {
			return Decision{d.Action, fmt.Sprintf("%s leads through a symbolic link to %s: %s", file, real, d.Reason)}
		}
	}

	// As the shell's rules judge a redirection: git's data is denied,
	// its hooks that are not wiggum's and info/ (the exclude file, which
	// no git command writes) are the agent's, as the shell's > has them.
	// A lock file written would stop every git command after it.
	if in := g.inGitDir(target); in != "" {
		if why := g.gitData(target); why != "" {
			return Decision{Deny, fmt.Sprintf("writing %s is not allowed: %s", file, why)}
		}
		if strings.HasSuffix(in, ".lock") {
			return Decision{Deny, fmt.Sprintf("writing %s is not allowed: a lock file there stops every git command until it is removed", file)}
		}
	} else if g.isGitDir(strings.TrimRight(filepath.ToSlash(target), "/")) {
		return Decision{Deny, fmt.Sprintf("%s is the repository's .git; use git commands instead", file)}
	}
	return Decision{Action: Allow}
}
