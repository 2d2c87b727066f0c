package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// ForeignHooksPathError is a core.hooksPath set by someone else (husky,
// lefthook, a team policy). wiggum does not fight over it without --force.
// Scope is the configuration it comes from (git config --show-scope:
// local, worktree, global, system, command).
type ForeignHooksPathError struct {
	Path, Scope string
	// InTree: the directory is in the working tree (a tracked .githooks),
	// where hooks written would show in git status.
	InTree bool
}

func (e *ForeignHooksPathError) Error() string {
	if e.InTree {
		return fmt.Sprintf("core.hooksPath is set to %q, a directory of your working tree, so another tool manages this repository's git hooks; wiggum changed nothing. With --force wiggum's hooks go there (existing hooks there are chained, not deleted) - and, unless git ignores them there, show in git status and go into the next commit", e.Path)
	}
	if e.Shared() {
		return fmt.Sprintf("core.hooksPath is set to %q in your %s git configuration, so every repository on this machine runs the hooks in that directory; wiggum changed nothing. With --force wiggum's hooks go there, for all of those repositories (existing hooks there are chained, not deleted; a repository wiggum never ran in gets nothing written by them)", e.Path, e.Scope)
	}
	return fmt.Sprintf("core.hooksPath is set to %q, so another tool manages this repository's git hooks; wiggum changed nothing. Run again with --force to install wiggum's hooks into that directory (existing hooks there are chained, not deleted)", e.Path)
}

// Shared reports whether the setting is not this repository's own but
// every repository's on the machine (or the user's).
func (e *ForeignHooksPathError) Shared() bool { return e.Scope == "global" || e.Scope == "system" }

// HooksPathShared returns the ForeignHooksPathError describing a
// core.hooksPath that is global or system-wide, nil otherwise: what
// install --force tells the person it did.
func HooksPathShared(ctx context.Context, repo *git.Repo) *ForeignHooksPathError {
	e := hooksPathOf(ctx, repo)
	if e == nil || !e.Shared() {
		return nil
	}
	return e
}

// HooksPathRelative returns core.hooksPath when it is set and relative
// (husky's .husky/_): git reads it against the worktree it runs in, so the
// hooks install writes serve the main tree only, and a linked worktree
// runs none of them. "" otherwise.
func HooksPathRelative(ctx context.Context, repo *git.Repo) string {
	hp, err := repo.ConfigValue(ctx, "core.hooksPath")
	if err != nil || hp == "" || filepath.IsAbs(hp) || strings.HasPrefix(hp, "~") {
		return ""
	}
	return hp
}

// hooksPathOf reads core.hooksPath and where it is set; nil when unset.
func hooksPathOf(ctx context.Context, repo *git.Repo) *ForeignHooksPathError {
	out, err := repo.Run(ctx, "config", "--show-scope", "--get", "core.hooksPath")
	if err != nil {
		return nil
	}
	scope, path, ok := strings.Cut(strings.TrimRight(out, "\n"), "\t")
	if !ok || path == "" {
		return nil
	}
	return &ForeignHooksPathError{Path: path, Scope: scope}
}

// shim is the git hook wiggum installs: a small POSIX sh script that runs
// the hook it replaced (kept as NAME.old) and then `wiggum hook git NAME`.
// Without a wiggum binary it lets git go on: a missing tool must not make
// commits fail. The hook kept is run as chain (chainRun) says.
func shim(name, fallback, chain string) []byte {
	run := `"$old" "$@"`
	switch chain {
	case chainHusky:
		run = `( . "$old" )`
	case "":
	default:
		// Sourced by its own shell with $0 the shim's path - NAME in the
		// hooks directory, as git ran it.
		run = shellQuote(chain) + ` -c '. "$0.old"' "$0" "$@"`
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString(checkpoint.GitHookMarker + "\n")
	b.WriteString("# Installed by 'wiggum install --git'; NAME.old, if present, is the hook that was here before.\n")
	fmt.Fprintf(&b, "old=\"$(dirname \"$0\")/%s.old\"\n", name)
	b.WriteString("wiggum=$(command -v wiggum 2>/dev/null) || wiggum=\n")
	if fallback != "" {
		fmt.Fprintf(&b, "[ -n \"$wiggum\" ] || { [ -x %s ] && wiggum=%s; }\n", shellQuote(fallback), shellQuote(fallback))
	}
	if name == "pre-push" {
		// Both hooks read the refs being pushed from stdin.
		b.WriteString("input=$(cat)\n")
		b.WriteString("if [ -x \"$old\" ]; then\n\tif [ -n \"$input\" ]; then printf '%s\\n' \"$input\"; fi | " + run + " || exit $?\nfi\n")
		b.WriteString("[ -n \"$wiggum\" ] || exit 0\n")
		fmt.Fprintf(&b, "if [ -n \"$input\" ]; then printf '%%s\\n' \"$input\"; fi | \"$wiggum\" hook git %s \"$@\"\n", name)
		return []byte(b.String())
	}
	b.WriteString("status=0\n")
	b.WriteString("if [ -x \"$old\" ]; then " + run + " || status=$?; fi\n")
	fmt.Fprintf(&b, "if [ -n \"$wiggum\" ]; then \"$wiggum\" hook git %s \"$@\" || true; fi\n", name)
	b.WriteString("exit $status\n")
	return []byte(b.String())
}

// chainHusky is chainRun's answer for a husky stub.
const chainHusky = "husky"

// chainRun says how the shim runs the hook it replaced, kept as NAME.old:
// "" runs it as a program; a shell (its shebang's: sh, bash...) sources
// it with $0 the hook's own path, since a hook that dispatches on the name
// it is called by (basename "$0": overcommit-style templates, run-parts
// hooks/NAME.d, a shared-hooks dispatcher) found nothing to run as
// NAME.old and let a push its team's check refuses go through; chainHusky
// sources a husky stub in a subshell (it finds the project's .husky/NAME
// by the name it is called by, too).
func chainRun(kept []byte) string {
	if huskyStub(kept) {
		return chainHusky
	}
	first, _, _ := strings.Cut(string(kept), "\n")
	interp, ok := strings.CutPrefix(strings.TrimSpace(first), "#!")
	if !ok {
		return ""
	}
	f := strings.Fields(interp)
	if len(f) == 2 && filepath.Base(f[0]) == "env" {
		f = f[1:]
	}
	if len(f) != 1 {
		return "" // options on the line: run as it is
	}
	switch filepath.Base(f[0]) {
	case "sh", "dash", "ash", "bash", "ksh", "zsh":
		return f[0]
	}
	return ""
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fallbackBinary is the absolute path of this wiggum, used by the shims
// when wiggum is not on PATH; "" when the running binary is not named
// wiggum (a test binary, say).
func fallbackBinary() string {
	exe, err := os.Executable()
	if err != nil || filepath.Base(exe) != "wiggum" {
		return ""
	}
	return exe
}

// HooksInTreeError is a hooks directory that is a symbolic link into the
// working tree (.git/hooks -> ../tools/githooks: a team's hooks, tracked):
// wiggum's hooks written there would be files of the tree - the team's
// hook renamed, wiggum's in its place - and the next commit would take
// them in.
type HooksInTreeError struct{ Link, Target string }

func (e *HooksInTreeError) Error() string {
	return fmt.Sprintf("the hooks directory %s is a symbolic link to %s, a directory in your working tree: wiggum's hooks written there would show in git status and go into the next commit (your hooks there renamed, wiggum's in their place); wiggum changed nothing. Run again with --force to install there all the same", e.Link, e.Target)
}

// hooksDir returns where git runs hooks for the repository, refusing a
// foreign core.hooksPath, or a hooks directory linked into the working
// tree, unless force is set.
func hooksDir(ctx context.Context, repo *git.Repo, force bool) (string, error) {
	hp, err := repo.ConfigValue(ctx, "core.hooksPath")
	if err != nil {
		return "", err
	}
	if hp != "" && !force {
		e := hooksPathOf(ctx, repo)
		if e == nil {
			e = &ForeignHooksPathError{Path: hp}
		}
		dir := hp
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(repo.Root, dir)
		}
		e.InTree = inWorkTree(repo, dir)
		return "", e
	}
	if hp == "" && !force {
		if fi, err := os.Lstat(repo.HooksDir); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if target, err := filepath.EvalSymlinks(repo.HooksDir); err == nil && inWorkTree(repo, target) {
				return "", &HooksInTreeError{Link: repo.HooksDir, Target: target}
			}
		}
	}
	return repo.HooksDir, nil
}

// inWorkTree reports whether dir lies in repo's working tree and not in
// its git directories: where files written show in git status.
func inWorkTree(repo *git.Repo, dir string) bool {
	return layout.Within(repo.Root, dir) && !layout.Within(repo.GitDir, dir) && !layout.Within(repo.CommonDir, dir)
}

// InstallGit writes wiggum's git hook shims into the repository's hooks
// directory (the common one, so linked worktrees share them). A foreign
// hook already there is renamed to NAME.old and chained.
func InstallGit(ctx context.Context, repo *git.Repo, force bool) ([]Change, error) {
	dir, err := hooksDir(ctx, repo, force)
	if err != nil {
		return nil, err
	}
	if err := keptInTheWay(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	fallback := fallbackBinary()
	var changes []Change
	for _, name := range hooks.GitHooks {
		path := filepath.Join(dir, name)
		have, err := os.ReadFile(path)
		kept, kerr := os.ReadFile(path + ".old")
		chain := ""
		switch {
		case kerr == nil:
			chain = chainRun(kept)
		case err == nil && !bytes.Contains(have, []byte(checkpoint.GitHookMarker)):
			chain = chainRun(have) // kept as NAME.old below
		}
		want := shim(name, fallback, chain)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return changes, fmt.Errorf("read %s: %w", path, err)
		case bytes.Contains(have, []byte(checkpoint.GitHookMarker)):
			if bytes.Equal(have, want) {
				continue
			}
		default:
			old := path + ".old"
			if kerr == nil && huskyStub(have) && huskyStub(kept) {
				// husky wrote its stub again over wiggum's shim (npm
				// install): the one kept is the same stub.
				break
			}
			if _, err := os.Lstat(old); err == nil {
				return changes, fmt.Errorf("%s is not wiggum's and %s already exists; move one of them away, then run again", path, old)
			}
			if err := os.Rename(path, old); err != nil {
				return changes, fmt.Errorf("keep the existing hook as %s: %w", old, err)
			}
			changes = append(changes, Change{Path: old, After: have})
			have = nil
		}
		if err := renameio.WriteFile(path, want, 0o755); err != nil {
			return changes, fmt.Errorf("write %s: %w", path, err)
		}
		changes = append(changes, Change{Path: path, Before: have, After: want})
	}
	return changes, nil
}

// RunByOtherName lists the hooks kept as NAME.old (paths) that the shim
// runs as a program, under that name, and whose text reads the name it is
// called by ($0, argv[0], __FILE__): a dispatcher of another language
// (overcommit's Ruby template) finds nothing for NAME.old. A shell script
// is sourced under its own name instead (chainRun); these are for install
// to name.
func RunByOtherName(ctx context.Context, repo *git.Repo, force bool) []string {
	dir, err := hooksDir(ctx, repo, force)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range hooks.GitHooks {
		kept, err := os.ReadFile(filepath.Join(dir, name+".old"))
		if err != nil || chainRun(kept) != "" {
			continue
		}
		for _, by := range []string{"$0", "argv[0]", "__FILE__", "basename"} {
			if bytes.Contains(kept, []byte(by)) {
				out = append(out, filepath.Join(dir, name+".old"))
				break
			}
		}
	}
	return out
}

// CheckGit returns the error InstallGit would refuse with (a foreign
// core.hooksPath, hooks linked into the tree, a NAME.old in the way),
// writing nothing: install checks it before it writes any agent's settings,
// so that a refusal - bad input, exit 2 - has changed nothing. Before, the
// agents' settings were written, or a first hook replaced, and then the
// refusal said "wiggum changed nothing".
func CheckGit(ctx context.Context, repo *git.Repo, force bool) error {
	dir, err := hooksDir(ctx, repo, force)
	if err != nil {
		return err
	}
	return keptInTheWay(dir)
}

// keptInTheWay refuses a hook that is not wiggum's whose NAME.old, where
// install keeps it, is taken - for every hook before any is written.
func keptInTheWay(dir string) error {
	for _, name := range hooks.GitHooks {
		path := filepath.Join(dir, name)
		have, err := os.ReadFile(path)
		if err != nil || bytes.Contains(have, []byte(checkpoint.GitHookMarker)) {
			continue
		}
		kept, kerr := os.ReadFile(path + ".old")
		if kerr == nil && huskyStub(have) && huskyStub(kept) {
			continue // husky's stub again over wiggum's shim: see InstallGit
		}
		if _, err := os.Lstat(path + ".old"); err == nil {
			return fmt.Errorf("%s is not wiggum's and %s already exists; wiggum changed nothing. Move one of them away, then run again", path, path+".old")
		}
	}
	return nil
}

// UninstallGit removes wiggum's shims and puts chained hooks back.
func UninstallGit(ctx context.Context, repo *git.Repo) ([]Change, error) {
	var changes []Change
	for _, name := range hooks.GitHooks {
		path := filepath.Join(repo.HooksDir, name)
		have, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(have, []byte(checkpoint.GitHookMarker)) {
			continue // absent, or not wiggum's: leave it alone
		}
		if err := os.Remove(path); err != nil {
			return changes, fmt.Errorf("remove %s: %w", path, err)
		}
		changes = append(changes, Change{Path: path, Before: have})
		old := path + ".old"
		if data, err := os.ReadFile(old); err == nil {
			if err := os.Rename(old, path); err != nil {
				return changes, fmt.Errorf("restore %s: %w", path, err)
			}
			changes = append(changes, Change{Path: path, After: data})
		}
	}
	return changes, nil
}
