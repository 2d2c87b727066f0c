package install

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// The rails read git's configuration before and after every attempt
// (configOf: git config --list), two git processes an iteration that
// touched no configuration at all - a quarter of the loop's git. configOf
// answers again from its last read while none of the files that read
// came from, or could have come from, has changed: their device, inode,
// size, modification and change times are as they were.
//
// The files: every file the read named (--show-origin, includes among
// them); the include directives' targets that do not exist yet; the
// repository's config and config.worktree; HEAD (an includeIf
// "onbranch:" follows it); the user's (GIT_CONFIG_GLOBAL, else
// ~/.gitconfig and the XDG one) and the system's (GIT_CONFIG_SYSTEM, else
// /etc/gitconfig) unless GIT_CONFIG_NOSYSTEM. A read is kept only when
// every one of them was last changed at least racyMargin before git read
// it: a file written in the same tick as the read (by another worker's
// agent, in a parallel run) could show its old content with its new
// stamp.

// memoRacy is how long before a read a file must have last changed for
// the read to be reused (a file system's coarsest clock tick, FAT's 2 s,
// with room); memoRacyLocal the same on the local Linux file systems,
// whose times come from the kernel's clock, coarse by one tick (1-10 ms),
// so that a repository made or configured a moment ago is recalled after
// its first iterations rather than after seconds.
var (
	memoRacy      = 3 * time.Second
	memoRacyLocal = 50 * time.Millisecond
)

// stamp is what a file was when a read was made; exists false for one
// that was not there.
type stamp struct {
	exists       bool
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

// configRead is one read of configOf's and the stamps of its files.
type configRead struct {
	entries []configEntry
	files   []string
	stamps  []stamp
}

var configMemo struct {
	sync.Mutex
	reads map[string]*configRead // by the repository's git dir and root
}

// memoKey names the repository a read is of.
func memoKey(repo *git.Repo) string { return repo.GitDir + "\x00" + repo.Root }

// recalled returns the last read of repo when its files are as they were.
func recalled(repo *git.Repo) ([]configEntry, bool) {
	configMemo.Lock()
	r := configMemo.reads[memoKey(repo)]
	configMemo.Unlock()
	if r == nil {
		return nil, false
	}
	for i, f := range r.files {
		if stampOf(f) != r.stamps[i] {
			return nil, false
		}
	}
	return slices.Clone(r.entries), true
}

// remember keeps a read of repo's made at start, unless one of its files
// changed too close to it to be trusted.
func remember(repo *git.Repo, entries []configEntry, start time.Time) {
	files := configFiles(repo, entries)
	stamps := make([]stamp, len(files))
	for i, f := range files {
		stamps[i] = stampOf(f)
		s := stamps[i]
		if !s.exists {
			continue
		}
		if racy := start.Add(-racyMargin(f)).UnixNano(); s.mtime > racy || s.ctime > racy {
			forget(repo)
			return
		}
	}
	configMemo.Lock()
	defer configMemo.Unlock()
	if configMemo.reads == nil {
		configMemo.reads = map[string]*configRead{}
	}
	configMemo.reads[memoKey(repo)] = &configRead{entries: slices.Clone(entries), files: files, stamps: stamps}
}

// forget drops the last read of repo: the next configOf asks git.
func forget(repo *git.Repo) {
	configMemo.Lock()
	delete(configMemo.reads, memoKey(repo))
	configMemo.Unlock()
}

// configFiles lists the files a read of repo's configuration came from or
// could come from (above).
func configFiles(repo *git.Repo, entries []configEntry) []string {
	home, _ := os.UserHomeDir()
	files := append(gitConfigFiles(repo, home), filepath.Join(repo.GitDir, "HEAD"))
	for _, e := range entries {
		files = append(files, e.file)
		if includeKey(strings.ToLower(e.key)) {
			files = append(files, includeTarget(e.file, e.value, home))
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// gitConfigFiles lists the config files git reads for repo of its own:
// the repository's and the worktree's, the user's and the system's.
func gitConfigFiles(repo *git.Repo, home string) []string {
	files := []string{
		filepath.Join(repo.CommonDir, "config"),
		filepath.Join(repo.GitDir, "config.worktree"),
		filepath.Join(repo.CommonDir, "config.worktree"),
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else {
		if home != "" {
			files = append(files, filepath.Join(home, ".gitconfig"))
		}
		if xdg := xdgConfig(home); xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "config"))
		}
	}
	if !truthy(os.Getenv("GIT_CONFIG_NOSYSTEM")) {
		if s := os.Getenv("GIT_CONFIG_SYSTEM"); s != "" {
			files = append(files, s)
		} else {
			files = append(files, "/etc/gitconfig")
		}
	}
	return slices.Compact(files)
}

// truthy reports whether a git boolean environment value is true.
func truthy(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
