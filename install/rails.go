package install

import (
	"bufio"
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
// the content of each of its shims, and the core.hooksPath lines of the
// shared config (read from the file: a git process for it would cost every
// iteration). Git hooks are not in the working tree, so a rollback does
// not bring back a shim an attempt deleted or a hooksPath it set; the loop
// compares before and after, and puts the shims back.
//
// It holds, too, the settings of the repository's config (and the
// worktree's) whose values git runs as commands (guard.CommandKey): one an
// attempt adds - core.fsmonitor, a filter - would run in wiggum's own git
// commands and in every later session, seen by no hook.
type GitRails struct {
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
	// core.hooksPath lines, which send every repository's hooks elsewhere
	// when the repository sets none.
	globalHooksPath string
	// ignore is the user's global ignore file (core.excludesFile, or the
	// XDG git/ignore) and its content: a pattern an attempt adds there
	// hides files from every commit, the story's included, in every
	// repository.
	ignore     string
	ignoreData []byte
}

// maxIgnore bounds the global ignore file GitRailsOf reads whole.
const maxIgnore = 1 << 20

// globalConfigFiles are the user's git config files, as git reads them.
func globalConfigFiles(home string) []string {
	if f := os.Getenv("GIT_CONFIG_GLOBAL"); f != "" {
		return []string{f}
	}
	var out []string
	if xdg := xdgConfig(home); xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"))
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	return out
}

func xdgConfig(home string) string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return x
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config")
}

// configEntry is one setting of a config file.
type configEntry struct {
	file, key, value string
}

func (c configEntry) String() string { return c.key + " = " + c.value }

// GitRailsOf reads the repository's git rails.
func GitRailsOf(repo *git.Repo) GitRails {
	g := GitRails{shims: map[string][]byte{}}
	for i, f := range []string{filepath.Join(repo.CommonDir, "config"), filepath.Join(repo.GitDir, "config.worktree")} {
		data, _ := os.ReadFile(f)
		if i == 0 {
			g.hooksPath = hooksPathLines(data)
		}
		// One read of the file for both: the commands and the settings.
		for _, e := range configEntries(f, data) {
			if guard.CommandKey(strings.ToLower(e.key), e.value) {
				g.commands = append(g.commands, e)
			}
			if settingKey(strings.ToLower(e.key)) {
				g.settings = append(g.settings, e)
			}
		}
	}
	home, _ := os.UserHomeDir()
	xdg := xdgConfig(home)
	if xdg != "" {
		g.ignore = filepath.Join(xdg, "git", "ignore")
	}
	for _, f := range globalConfigFiles(home) {
		data, _ := os.ReadFile(f)
		if hp := hooksPathLines(data); hp != "" {
			g.globalHooksPath += f + ": " + hp + "\n"
		}
		for _, e := range configEntries(f, data) {
			k := strings.ToLower(e.key)
			if guard.CommandKey(k, e.value) {
				g.commands = append(g.commands, e)
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
	if g.hooksPath != after.hooksPath {
		return "changed core.hooksPath in the repository's git config, so git no longer runs wiggum's hooks", false
	}
	if g.hooksPath == "" && g.globalHooksPath != after.globalHooksPath {
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

// hooksPathLines returns the lines of a git config file's content that set
// hooksPath, as written; "" when there are none.
func hooksPathLines(data []byte) string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, _, ok := strings.Cut(line, "="); ok && strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
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

// AddedCommands lists the command settings after has that g had not.
func (g GitRails) AddedCommands(after GitRails) []string {
	var added []string
	for _, c := range after.commands {
		if !slices.Contains(g.commands, c) {
			added = append(added, c.String()+" (in "+c.file+")")
		}
	}
	return added
}

// RemoveAdded takes the command settings after has that g had not out of
// their config files (git config --file: no index, no fsmonitor). In a
// parallel run every worker sees the shared config's settings: one may
// take a setting out before another tries, or hold the config's lock
// while it does; a setting already gone is done, a held lock is waited
// for.
func (g GitRails) RemoveAdded(ctx context.Context, repo *git.Repo, after GitRails) error {
	for _, c := range after.commands {
		if slices.Contains(g.commands, c) {
			continue
		}
		var err error
		for try := 0; try < 20; try++ {
			data, _ := os.ReadFile(c.file)
			if !slices.Contains(commandEntries(c.file, data), c) {
				err = nil
				break
			}
			_, err = repo.Run(ctx, "config", "--file", c.file, "--fixed-value", "--unset-all", c.key, c.value)
			var ge *git.Error
			if err == nil || (errors.As(err, &ge) && ge.Status() == 5) {
				err = nil // taken out, or already gone
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// commandEntries reads the settings of a git config file (path, its
// content data) whose values git runs as commands. Sections ([core],
// [filter "x"], [a.b]) and keys are read as git does, values unquoted; a
// line continued with a backslash is joined.
func commandEntries(path string, data []byte) []configEntry {
	var out []configEntry
	for _, e := range configEntries(path, data) {
		if guard.CommandKey(strings.ToLower(e.key), e.value) {
			out = append(out, e)
		}
	}
	return out
}

// configEntries reads every setting of a git config file (path, its
// content data): section and name lowercased, a subsection as written.
func configEntries(path string, data []byte) []configEntry {
	var out []configEntry
	section := ""
	lines := strings.Split(strings.ReplaceAll(string(data), "\\\n", ""), "\n")
	for _, raw := range lines {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			head, rest, _ := strings.Cut(line[1:], "]")
			line = strings.TrimSpace(rest)
			name, sub, quoted := strings.Cut(head, " ")
			section = strings.ToLower(strings.TrimSpace(name))
			if quoted {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		k, v, _ := strings.Cut(line, "=")
		key := section + "." + strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		out = append(out, configEntry{file: path, key: key, value: v})
	}
	return out
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
	for _, k := range changedKeys(g.settings, after.settings) {
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
	for _, k := range changedKeys(g.settings, after.settings) {
		err := configLocked(ctx, repo, "config", "--file", k.file, "--unset-all", k.key)
		var ge *git.Error
		if err != nil && !(errors.As(err, &ge) && ge.Status() == 5) {
			return err
		}
		for _, v := range values(g.settings, k) {
			if err := configLocked(ctx, repo, "config", "--file", k.file, "--add", k.key, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// configLocked runs a git config command, trying again while another
// process (another worker putting the same settings back) holds the
// config file's lock.
func configLocked(ctx context.Context, repo *git.Repo, args ...string) error {
	var err error
	for try := 0; try < 20; try++ {
		if _, err = repo.Run(ctx, args...); err == nil || !strings.Contains(err.Error(), "could not lock config file") {
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
func changedKeys(a, b []configEntry) []fileKey {
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
