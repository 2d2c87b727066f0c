package git

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// discover answers what Open's rev-parse would, from a few stats and
// small file reads, for the common layouts: a working tree with a .git
// directory, or a .git file naming its git dir (linked worktrees,
// submodules). It returns nil whenever git could answer differently, and
// Open then asks git: an environment variable that steers discovery, a
// parent directory that is itself a git dir (inside .git, a bare
// repository), a file system boundary on the way up, a directory another
// user owns (safe.directory), or a configuration that could move the
// working tree or the hooks (core.worktree, core.bare, core.hooksPath,
// include.path, a config file it cannot read or place). "Could" is read
// conservatively: a config file that merely mentions such a key sends
// Open to git.
func discover(dir string) *Repo {
	for _, name := range []string{"GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
		"GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"} {
		if os.Getenv(name) != "" {
			return nil
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	// git works from the physical directory (getcwd), whatever symlinks
	// the caller's path went through.
	d, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil
	}
	var dev uint64
	for first := true; ; first = false {
		fi, err := os.Stat(d)
		if err != nil {
			return nil
		}
		d0, _, ok := owner(fi)
		if !ok || (!first && d0 != dev) {
			return nil // git stops at a mount point unless told otherwise
		}
		dev = d0
		dotgit := filepath.Join(d, ".git")
		if _, err := os.Lstat(dotgit); err == nil {
			return fromDotGit(d, dotgit)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if isGitDir(d) {
			return nil // inside a git dir, or a bare repository
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil // not a repository: git says so in its own words
		}
		d = parent
	}
}

// fromDotGit is the repository whose working tree root holds dotgit.
func fromDotGit(root, dotgit string) *Repo {
	fi, err := os.Stat(dotgit)
	if err != nil {
		return nil
	}
	gitDir := dotgit
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() || fi.Size() > 4096 {
			return nil
		}
		data, err := statefile.ReadFile(dotgit)
		if err != nil {
			return nil
		}
		p, ok := strings.CutPrefix(string(data), "gitdir: ")
		if !ok {
			return nil
		}
		p = strings.TrimRight(p, "\r\n")
		if p == "" || strings.ContainsAny(p, "\r\n") {
			return nil
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		gitDir = p
	}
	// git names the git dir by its real path.
	gitDir, err = filepath.EvalSymlinks(gitDir)
	if err != nil || !isGitDir(gitDir) {
		return nil // git would go on looking, or fail: let it say which
	}
	commonDir := gitDir
	if data, err := statefile.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimRight(string(data), "\r\n")
		if c == "" || strings.ContainsAny(c, "\r\n") {
			return nil
		}
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		if commonDir, err = filepath.EvalSymlinks(c); err != nil {
			return nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, p := range []string{root, dotgit, gitDir} {
		if !ownedByUs(p) {
			return nil
		}
	}
	if !configPlain(commonDir, gitDir) {
		return nil
	}
	return &Repo{Root: root, GitDir: gitDir, CommonDir: commonDir,
		HooksDir: filepath.Join(commonDir, "hooks"), InfoDir: filepath.Join(commonDir, "info")}
}

// isGitDir is git's own test for a git directory, loosely: a HEAD and an
// object store (its own or, in a linked worktree, the common dir's).
func isGitDir(d string) bool {
	if _, err := os.Lstat(filepath.Join(d, "HEAD")); err != nil {
		return false
	}
	for _, p := range []string{"objects", "commondir"} {
		if _, err := os.Lstat(filepath.Join(d, p)); err == nil {
			return true
		}
	}
	return false
}

// ownedByUs: git refuses a repository another user owns unless
// safe.directory says otherwise; that is git's to judge.
func ownedByUs(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	_, uid, ok := owner(fi)
	return ok && uid == os.Geteuid()
}

// configPlain reports whether no configuration git would read here can
// move the working tree or the hooks: none of its files mentions
// core.hooksPath, core.worktree, an include, or a core.bare other than
// false.
func configPlain(commonDir, gitDir string) bool {
	return configLacks(commonDir, gitDir, bareSet, layoutWords...)
}

// layoutWords and bareSet are configPlain's test of a config line.
var layoutWords = []string{"hookspath", "worktree", "include"}

func bareSet(line string) bool { return strings.Contains(line, "bare") && line != "bare=false" }

// configLacks reports whether no line of any config file git reads here
// (system, global, the repository's, this worktree's; lower-cased, blanks
// removed) holds one of words or matches also (nil for none). A file it
// cannot read or locate counts as holding them.
func configLacks(commonDir, gitDir string, also func(line string) bool, words ...string) bool {
	files, ok := systemLevel("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "gitconfig")
	if !ok {
		return false
	}
	if g, ok := os.LookupEnv("GIT_CONFIG_GLOBAL"); ok {
		files = append(files, g)
	} else {
		xdg, home := xdgConfig()
		if home == "" {
			return false
		}
		files = append(files, filepath.Join(xdg, "git", "config"), filepath.Join(home, ".gitconfig"))
	}
	files = append(files, filepath.Join(commonDir, "config"), filepath.Join(gitDir, "config.worktree"))
	for _, f := range files {
		if f == "" {
			continue
		}
		data, err := statefile.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || !linesLack(data, also, words...) {
			return false
		}
	}
	return true
}

// xdgConfig is git's $XDG_CONFIG_HOME (default ~/.config) and $HOME; home
// "" when unset.
func xdgConfig() (xdg, home string) {
	home = os.Getenv("HOME")
	xdg = os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	return xdg, home
}

// linesLack reports whether no line of data (lower-cased, blanks removed)
// holds one of words or matches also (nil for none).
func linesLack(data []byte, also func(line string) bool, words ...string) bool {
	for _, line := range strings.Split(strings.ToLower(string(data)), "\n") {
		line = strings.Join(strings.Fields(line), "")
		for _, word := range words {
			if strings.Contains(line, word) {
				return false
			}
		}
		if also != nil && also(line) {
			return false
		}
	}
	return true
}

// systemLevel is the system-wide files git reads for name (gitconfig,
// gitattributes), none when the variable noSystem turns them off. ok is
// false where only git can say: a value of noSystem git would not read as
// a boolean, or files it cannot locate.
func systemLevel(noSystem, override, name string) (files []string, ok bool) {
	switch strings.ToLower(os.Getenv(noSystem)) {
	case "1", "true", "yes", "on":
		return nil, true
	case "", "0", "false", "no", "off":
		return systemFiles(override, name)
	default:
		return nil, false
	}
}

// systemFiles are the places a system-wide file (gitconfig,
// gitattributes) can be for the git that runs: what the variable env
// names when set, else /etc/NAME and etc/NAME under the prefix the binary
// was installed in (git puts it there for any prefix but /usr). ok is
// false when git's location does not say where its prefix is.
func systemFiles(env, name string) (files []string, ok bool) {
	if f, set := os.LookupEnv(env); set {
		return []string{f}, true
	}
	files = []string{filepath.Join("/etc", name)}
	bin := binary()
	if !filepath.IsAbs(bin) {
		return nil, false
	}
	for _, b := range []string{bin, resolved(bin)} {
		if b == "" || filepath.Base(filepath.Dir(b)) != "bin" {
			return nil, false
		}
		files = append(files, filepath.Join(filepath.Dir(filepath.Dir(b)), "etc", name))
	}
	return files, true
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}
