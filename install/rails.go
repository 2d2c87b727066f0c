package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/guard"
	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/internal/git"
)

// GitRails is wiggum's git hooks as the repository has them at one moment:
// the content of each of its shims, and the core.hooksPath settings of the
// repository's config. Git hooks are not in the working tree, so a
// rollback does not bring back a shim an attempt deleted or a hooksPath
// it set; the loop compares before and after, and puts the shims back.
//
// It holds, too, the settings git reads for the repository whose values
// git runs as commands (guard.CommandKey): one an attempt adds -
// core.fsmonitor, a filter - would run in wiggum's own git commands and
// in every later session, seen by no hook.
//
// The config is git's own reading of it (configOf), not a parse of its
// files: one that differed from git's - an inline comment, quotes in a
// value, a setting on a section's header line, a file only git knows it
// reads (config.worktree, an include) - would let a setting git runs
// through unseen.
type GitRails struct {
	// err: git could not read the config (a line it cannot parse); the
	// config settings below are then unknown, not unset.
	err       error
	shims     map[string][]byte
	hooksPath string
	commands  []configEntry
	// settings: the config settings that change how git makes wiggum's
	// own commits (settingKey), which no rollback puts back.
	settings []configEntry
	// others: the hooks directory's other hooks (not wiggum's shims, not
	// git's *.sample files), which git runs in wiggum's own commits and
	// checkouts: one an attempt adds or changes plants a command there.
	others map[string][]byte
	// The user's git config (~/.gitconfig, the XDG one, or
	// GIT_CONFIG_GLOBAL's): its command settings are in commands too (git
	// runs them in every repository); globalHooksPath is its
	// core.hooksPath settings, which send every repository's hooks
	// elsewhere when the repository sets none.
	globalHooksPath string
	// ignore is the user's global ignore file (core.excludesFile, or the
	// XDG git/ignore) and its content: a pattern an attempt adds there
	// hides files from every commit, the story's included, in every
	// repository.
	ignore     string
	ignoreData []byte
	// userConfig: the user's own git config files and their content
	// (globalconfig.go): an attempt that rewrites one - dropping their
	// identity, their signing key - adds no command, yet changes git in
	// every repository, where no rollback reaches.
	userConfig []userConfigFile
}

// maxIgnore bounds the global ignore file GitRailsOf reads whole.
const maxIgnore = 1 << 20

func xdgConfig(home string) string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config")
}

// configEntry is one setting of a config file, as git reads it: its
// scope (git config --show-scope: system, global, local, worktree), its
// file, its key (section and name lowercased, a subsection as written)
// and its value.
type configEntry struct {
	scope, file, key, value string
}

func (c configEntry) String() string { return c.key + " = " + c.value }

// GitRailsOf reads the repository's git rails.
func GitRailsOf(ctx context.Context, repo *git.Repo) GitRails {
	g := GitRails{shims: map[string][]byte{}}
	home, _ := os.UserHomeDir()
	if xdg := xdgConfig(home); xdg != "" {
		g.ignore = filepath.Join(xdg, "git", "ignore")
	}
	g.userConfig = userConfigFiles(home)
	var entries []configEntry
	entries, g.err = configOf(ctx, repo)
	for _, e := range entries {
		k := strings.ToLower(e.key)
		if guard.CommandKey(k, e.value) {
			g.commands = append(g.commands, e)
		}
		switch e.scope {
		case "local", "worktree":
			if settingKey(k) {
				g.settings = append(g.settings, e)
			}
			if k == "core.hookspath" {
				g.hooksPath += e.file + ": " + e.value + "\n"
			}
		case "global":
			if k == "core.hookspath" {
				g.globalHooksPath += e.file + ": " + e.value + "\n"
			}
			if k == "core.excludesfile" {
				g.ignore = e.value
				if rest, ok := strings.CutPrefix(e.value, "~/"); ok && home != "" {
					g.ignore = filepath.Join(home, rest)
				}
			}
		}
	}
	if fi, err := os.Lstat(g.ignore); g.ignore != "" && err == nil && !fi.Mode().IsRegular() {
		// /dev/null (a common way to turn it off), a link: not a file
		// of its own that a restore could write back.
		g.ignore = ""
	}
	if g.ignore != "" {
		if f, err := os.Open(g.ignore); err == nil {
			g.ignoreData, _ = io.ReadAll(io.LimitReader(f, maxIgnore))
			f.Close()
		}
	}
	for _, name := range hooks.GitHooks {
		if data, err := os.ReadFile(filepath.Join(repo.HooksDir, name)); err == nil && bytes.Contains(data, []byte(checkpoint.GitHookMarker)) {
			g.shims[name] = data
		}
	}
	g.others = map[string][]byte{}
	ents, _ := os.ReadDir(repo.HooksDir)
	for _, e := range ents {
		if _, shim := g.shims[e.Name()]; shim || !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".sample") || len(g.others) >= 256 {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(repo.HooksDir, e.Name())); err == nil {
			g.others[e.Name()] = data
		}
	}
	return g
}

// Broken says what after lost of g: a shim removed or changed, or
// core.hooksPath set or changed (git would then look for hooks elsewhere);
// "" when nothing was lost. restorable says whether Restore puts it right:
// not for core.hooksPath, which is the user's config to fix.
func (g GitRails) Broken(after GitRails) (what string, restorable bool) {
	if len(g.shims) == 0 {
		return "", true
	}
	known := g.err == nil && after.err == nil // else the settings are unknown (ConfigErr)
	if known && g.hooksPath != after.hooksPath {
		now := strings.ReplaceAll(strings.TrimSpace(after.hooksPath), "\n", "; ")
		if now == "" {
			now = "unset, was " + strings.ReplaceAll(strings.TrimSpace(g.hooksPath), "\n", "; ")
		}
		return "changed core.hooksPath in the repository's git config (" + now + "), so git no longer runs wiggum's hooks", false
	}
	if known && g.hooksPath == "" && g.globalHooksPath != after.globalHooksPath {
		return "changed core.hooksPath in your own git config (" + strings.TrimSpace(after.globalHooksPath+" "+g.globalHooksPath) +
			"), so git runs no repository's hooks there, wiggum's included - in every repository of yours: undo it (git config --global --unset core.hooksPath)", false
	}
	var lost []string
	for _, name := range hooks.GitHooks {
		if have, ok := g.shims[name]; ok && !bytes.Equal(have, after.shims[name]) {
			lost = append(lost, name)
		}
	}
	if len(lost) > 0 {
		return "removed or changed wiggum's git hook(s) " + strings.Join(lost, " and "), true
	}
	return "", true
}

// Restore puts back what after lost of g: the config's hooksPath is the
// user's to fix (wiggum does not edit the config behind their back), the
// shims are written again.
func (g GitRails) Restore(repo *git.Repo) error {
	for name, data := range g.shims {
		path := filepath.Join(repo.HooksDir, name)
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, data) {
			continue
		}
		if err := os.MkdirAll(repo.HooksDir, 0o755); err != nil {
			return err
		}
		if err := renameio.WriteFile(path, data, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// IgnoreChanged reports whether the user's global ignore file changed
// between g and after (its name, or ""), for RestoreIgnore.
//
// Lines added for the agents' own files are not a change: Claude Code
// puts **/.claude/settings.local.json there itself when it makes that
// file (its sandbox does, every session) - they hide nothing of a story.
func (g GitRails) IgnoreChanged(after GitRails) string {
	if g.ignore == "" || g.ignore != after.ignore || bytes.Equal(g.ignoreData, after.ignoreData) || len(g.ignoreData) >= maxIgnore {
		return ""
	}
	was := map[string]int{}
	for _, l := range strings.Split(string(g.ignoreData), "\n") {
		was[strings.TrimSpace(l)]++
	}
	for _, l := range strings.Split(string(after.ignoreData), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case was[l] > 0:
			was[l]--
		case l == "" || strings.HasPrefix(l, "#") || clientOwnPattern(l):
		default:
			return g.ignore // a pattern added
		}
	}
	for l, n := range was {
		if n > 0 && l != "" && !strings.HasPrefix(l, "#") {
			return g.ignore // a pattern removed
		}
	}
	return ""
}

// clientOwnPattern reports whether an ignore pattern matches only files
// under a .claude directory (its components are matched one by one, so
// one naming .claude as a directory cannot reach beyond it).
func clientOwnPattern(p string) bool {
	return strings.HasPrefix(p, ".claude/") || strings.Contains(p, "/.claude/")
}

// RestoreIgnore writes the global ignore file back as g read it (removed
// when it had none).
func (g GitRails) RestoreIgnore() error {
	if g.ignoreData == nil {
		if err := os.Remove(g.ignore); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return renameio.WriteFile(g.ignore, g.ignoreData, 0o644)
}

// ConfigErr says why git could not read the config when g was read (a
// line it cannot parse); nil when it could. The config's settings are
// then unknown: nothing of them is compared or put back.
func (g GitRails) ConfigErr() error { return g.err }

// AddedCommands lists the command settings after has that g had not;
// none when either could not read the config (ConfigErr): every setting
// of one read would look added against the nothing of the other, and
// RemoveAdded would take the person's credential helpers and filters out
// of their own and the system's config.
func (g GitRails) AddedCommands(after GitRails) []string {
	if g.err != nil || after.err != nil {
		return nil
	}
	var added []string
	for _, c := range after.commands {
		if !slices.Contains(g.commands, c) {
			added = append(added, c.String()+" (in "+c.file+")")
		}
	}
	return added
}

// RemoveAdded takes the command settings after has that g had not out of
// their config files (git config --file: no index, no fsmonitor), and
// asks git again: a setting git still reads is an error, never taken for
// gone. In a parallel run every worker sees the shared config's settings:
// one may take a setting out before another tries (git then finds none
// to unset, which is no error), or hold the config's lock while it does
// (waited for).
func (g GitRails) RemoveAdded(ctx context.Context, repo *git.Repo, after GitRails) error {
	if g.err != nil || after.err != nil {
		return nil // unknown: nothing is taken for added (AddedCommands)
	}
	var added []configEntry
	for _, c := range after.commands {
		if slices.Contains(g.commands, c) {
			continue
		}
		added = append(added, c)
		err := configLocked(ctx, c.file, "--fixed-value", "--unset-all", c.key, c.value)
		var ge *git.Error
		if err != nil && !(errors.As(err, &ge) && ge.Status() == 5) {
			return err
		}
	}
	if len(added) == 0 {
		return nil
	}
	now, err := configOf(ctx, repo)
	if err != nil {
		return err
	}
	var left []string
	for _, c := range added {
		if slices.Contains(now, c) {
			left = append(left, c.String()+" (in "+c.file+")")
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("git still reads %s: take it out of the file by hand", strings.Join(left, "; "))
	}
	return nil
}

// configOf is every setting git reads for the repository, as git reads
// it (git config --list: the system's, the user's, the repository's and
// the worktree's config, and the files they include), in git's order.
// Settings given on git's command line (wiggum's own, GIT_CONFIG_*) are
// left out: they are no file's.
func configOf(ctx context.Context, repo *git.Repo) ([]configEntry, error) {
	if es, ok := recalled(repo); ok {
		return es, nil // configmemo.go
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, ConfigReadLimit)
	out, err := repo.Run(rctx, "config", "--list", "-z", "--show-scope", "--show-origin")
	timedOut := errors.Is(rctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		forget(repo)
		if (timedOut || git.StuckOf(err) != nil) && ctx.Err() == nil {
			return nil, &BlockedError{Limit: ConfigReadLimit, Blocking: blockedBy(ctx, repo)} // configblock.go
		}
		return nil, fmt.Errorf("read the git config: %w", err)
	}
	f := strings.Split(out, "\x00")
	var es []configEntry
	for i := 0; i+2 < len(f); i += 3 {
		file, ok := strings.CutPrefix(f[i+1], "file:")
		if !ok || f[i] == "command" {
			continue
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(repo.Root, file) // git runs at the top of the tree
		}
		k, v, _ := strings.Cut(f[i+2], "\n")
		es = append(es, configEntry{scope: f[i], file: file, key: k, value: v})
	}
	remember(repo, es, start)
	return es, nil
}

// settingKey reports whether key (lowercased) changes how git makes
// wiggum's own commits: signing them (an agent that turns
// commit.gpgsign on with no key there to sign with fails every later
// commit of the run), whose name they carry (an agent's user.email
// unset, with no global identity, fails them too), or whether there is a
// working tree at all.
func settingKey(key string) bool {
	switch key {
	case "commit.gpgsign", "tag.gpgsign", "tag.forcesignannotated", "gpg.format", "user.signingkey",
		"user.name", "user.email", "core.bare", "core.worktree":
		return true
	}
	// Where a remote's fetches and pushes go - wiggum's own, in a run
	// shared through it (--remote), and the person's after the run: an
	// agent's git remote set-url, or a url.<base>.insteadOf that rewrites
	// it, would send them to another server; a proxy of the agent's, or
	// TLS verification turned off, would put another party in the middle.
	// A remote's whole section: git remote rename or remove takes its
	// fetch refspec too, and a remote put back with its url alone fetched
	// nothing into its remote-tracking refs.
	if strings.HasPrefix(key, "remote.") {
		return true
	}
	if strings.HasPrefix(key, "http.") && (strings.HasSuffix(key, ".proxy") || strings.HasSuffix(key, ".sslverify")) {
		return true
	}
	return strings.HasPrefix(key, "url.") && (strings.HasSuffix(key, ".insteadof") || strings.HasSuffix(key, ".pushinsteadof"))
}

// newRemote reports whether k is the URL of a remote that before did not
// have at all: one the attempt added, which moves no existing remote's
// traffic and is left alone.
func newRemote(k fileKey, before []configEntry) bool {
	if !strings.HasPrefix(k.key, "remote.") {
		return false
	}
	i := strings.LastIndexByte(k.key, '.')
	prefix := k.key[:i+1] // remote.<name>.
	for _, e := range before {
		if strings.HasPrefix(e.key, prefix) {
			return false
		}
	}
	return true
}

// ChangedSettings describes the settings (settingKey) after has that g
// had not, had otherwise, or that g had and after has not; nil when none
// changed.
func (g GitRails) ChangedSettings(after GitRails) []string {
	var out []string
	for _, k := range g.changedKeys(after) {
		now := "unset"
		if vs := values(after.settings, k); len(vs) > 0 {
			now = "= " + strings.Join(vs, ", ")
		}
		out = append(out, fmt.Sprintf("%s %s (was %s)", k.key, now, orUnset(values(g.settings, k))))
	}
	return out
}

// RestoreSettings puts the settings ChangedSettings names back as g had
// them, in their own config files (git config --file: no index, no
// fsmonitor).
func (g GitRails) RestoreSettings(ctx context.Context, repo *git.Repo, after GitRails) error {
	for _, k := range g.changedKeys(after) {
		err := configLocked(ctx, k.file, "--unset-all", k.key)
		var ge *git.Error
		if err != nil && !(errors.As(err, &ge) && ge.Status() == 5) {
			return err
		}
		for _, v := range values(g.settings, k) {
			if err := configLocked(ctx, k.file, "--add", k.key, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// configLocked runs git config --file file args, on that file alone
// (git.ConfigFile: no repository, no include opened), trying again while
// another process (another worker putting the same settings back) holds
// the file's lock.
func configLocked(ctx context.Context, file string, args ...string) error {
	var err error
	for try := 0; try < 20; try++ {
		if _, err = git.ConfigFile(ctx, file, args...); err == nil || !strings.Contains(err.Error(), "could not lock config file") {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// fileKey is a config key in one file.
type fileKey struct{ file, key string }

// changedKeys lists the file and key pairs whose values differ between a
// and b, in the order they first appear.
func (g GitRails) changedKeys(after GitRails) []fileKey {
	if g.err != nil || after.err != nil {
		return nil
	}
	a, b := g.settings, after.settings
	var out []fileKey
	for _, e := range append(append([]configEntry{}, a...), b...) {
		k := fileKey{e.file, e.key} // section and name lowercased, a subsection as written (configEntries)
		if slices.Contains(out, k) || slices.Equal(values(a, k), values(b, k)) || newRemote(k, a) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// values lists the values es has for k, in order.
func values(es []configEntry, k fileKey) []string {
	var out []string
	for _, e := range es {
		if e.file == k.file && e.key == k.key {
			out = append(out, e.value)
		}
	}
	return out
}

func orUnset(vs []string) string {
	if len(vs) == 0 {
		return "unset"
	}
	return strings.Join(vs, ", ")
}

// ChangedHooks lists the hooks other than wiggum's that after has and g
// had not, or had with other content.
func (g GitRails) ChangedHooks(after GitRails) []string {
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(after.others)) {
		if was, ok := g.others[name]; !ok || !bytes.Equal(was, after.others[name]) {
			changed = append(changed, name)
		}
	}
	return changed
}

// RestoreHooks puts the hooks ChangedHooks names back as g had them: one
// it had not is removed.
func (g GitRails) RestoreHooks(repo *git.Repo, after GitRails) error {
	for _, name := range g.ChangedHooks(after) {
		path := filepath.Join(repo.HooksDir, name)
		was, ok := g.others[name]
		var err error
		if !ok {
			err = os.Remove(path)
		} else {
			err = renameio.WriteFile(path, was, 0o755)
		}
		if err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
