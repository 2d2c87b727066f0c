package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// A config file git reads that is a FIFO - one an include.path or
// includeIf.*.path names (mkfifo .git/x; git config include.path x), or
// one of git's own - makes every git process block opening it, for ever:
// the rails' read after an attempt, then wiggum's status, commit and
// rollback. The read has a time limit (ConfigReadLimit); when git does
// not finish within it, each config file is read alone (git.ConfigFile,
// which follows no include) to find the includes that name a FIFO or a
// device, and Unblock takes them out of the file that names them.

// ConfigReadLimit bounds the rails' read of git's configuration (git
// config --list takes milliseconds; one that blocks never ends). A
// variable for tests.
var ConfigReadLimit = 5 * time.Second

// maxIncludeDepth is how deep git itself follows includes.
const maxIncludeDepth = 10

// Blocking is a file git blocks opening (a FIFO, a device) and the
// include that names it: Key and Value in File, which is "" when the file
// is one of git's own config files (configFiles), named by no include.
type Blocking struct {
	Target, Kind     string
	File, Key, Value string
}

// BlockedError is a read of git's configuration that did not finish
// within Limit, and the files found that make git block.
type BlockedError struct {
	Limit    time.Duration
	Blocking []Blocking
}

func (e *BlockedError) Error() string {
	if len(e.Blocking) == 0 {
		return fmt.Sprintf("git cannot read its configuration: git config --list did not finish within %s, and none of the files it reads is a FIFO or a device", e.Limit)
	}
	var parts []string
	for _, b := range e.Blocking {
		s := b.Target + " blocks (" + b.Kind + ")"
		if b.File == "" {
			s += ", and it is one of git's own config files"
		} else {
			s += ", named by " + b.Key + " in " + b.File
		}
		parts = append(parts, s)
	}
	return "git cannot read its configuration: " + strings.Join(parts, "; ")
}

// blockingKind says what path is when git would block opening it - "a
// FIFO", "a device" (but /dev/null, which git reads as empty) - or "".
// It does not open path.
func blockingKind(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return ""
	case fi.Mode()&os.ModeNamedPipe != 0:
		return "a FIFO"
	case fi.Mode()&os.ModeDevice != 0:
		if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(fi, null) {
			return ""
		}
		return "a device"
	}
	return ""
}

// includeKey reports whether key (lowercased) makes git read the file its
// value names as more config: include.path, includeIf.COND.path.
func includeKey(key string) bool {
	return key == "include.path" || strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")
}

// includeTarget is the file an include in file names, as git finds it: ~/
// is the home directory, a relative path is file's directory's.
func includeTarget(file, value, home string) string {
	switch {
	case strings.HasPrefix(value, "~/") && home != "":
		return filepath.Join(home, value[2:])
	case !filepath.IsAbs(value):
		return filepath.Join(filepath.Dir(file), value)
	}
	return value
}

// blockedBy finds what makes git block reading repo's configuration: git's
// own config files that are a FIFO or a device, and the includes - in them
// and in the files they include - that name one. Each file is read by git
// alone (git.ConfigFile), which opens no include; it runs only once a read
// has not finished in time.
func blockedBy(ctx context.Context, repo *git.Repo) []Blocking {
	home, _ := os.UserHomeDir()
	var found []Blocking
	seen := map[string]bool{}
	var walk func(file string, depth int)
	walk = func(file string, depth int) {
		if seen[file] || depth > maxIncludeDepth {
			return
		}
		seen[file] = true
		if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, ConfigReadLimit)
		out, err := git.ConfigFile(rctx, file, "--list", "-z")
		cancel()
		if err != nil {
			return
		}
		for _, kv := range git.SplitZ(out) {
			k, v, _ := strings.Cut(kv, "\n")
			if !includeKey(strings.ToLower(k)) {
				continue
			}
			target := includeTarget(file, v, home)
			if kind := blockingKind(target); kind != "" {
				found = append(found, Blocking{Target: target, Kind: kind, File: file, Key: k, Value: v})
				continue
			}
			walk(target, depth+1)
		}
	}
	for _, f := range gitConfigFiles(repo, home) {
		if kind := blockingKind(f); kind != "" {
			found = append(found, Blocking{Target: f, Kind: kind})
			continue
		}
		walk(f, 0)
	}
	return found
}

// release lets the processes waiting to open the FIFO path (not a device)
// go on: it is opened for writing without waiting, and closed, which they
// read as its end - an empty config. A git already blocked there when its
// include is taken out - another worker's, the agent's - would wait on
// otherwise.
func release(path string) {
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// Unblock makes git able to read repo's configuration again when an
// include names a file git blocks opening: each such include is taken out
// of the file that names it (git config --file, read alone), and git reads
// the configuration again. blocked is what blocked git, nil when nothing
// did - the common case, which costs what configOf costs (no git process
// while the config files are unchanged); taken lists the includes taken
// out, and the gits already waiting on one are let go (release). err
// says why git still cannot read its configuration: no git may run on
// the repository then, every one would hang.
func Unblock(ctx context.Context, repo *git.Repo) (blocked *BlockedError, taken []string, err error) {
	_, err = configOf(ctx, repo)
	if !errors.As(err, &blocked) {
		return nil, nil, nil // a config git cannot parse is GitRailsOf's to report
	}
	if len(blocked.Blocking) == 0 {
		// Nothing found that blocks: a git slowed down (a loaded
		// machine, a hung network file system), given one more try.
		if _, err := configOf(ctx, repo); err != nil {
			return blocked, nil, err
		}
		return nil, nil, nil
	}
	for _, b := range blocked.Blocking {
		if b.File == "" {
			return blocked, taken, fmt.Errorf("%v, which wiggum cannot put back: remove it and write the config file again", blocked)
		}
		d := b.Key + " = " + b.Value + " (in " + b.File + ")"
		if slices.Contains(taken, d) {
			continue
		}
		err := configLocked(ctx, b.File, "--fixed-value", "--unset-all", b.Key, b.Value)
		var ge *git.Error
		if err != nil && !(errors.As(err, &ge) && ge.Status() == 5) {
			return blocked, taken, fmt.Errorf("%v; taking %s out failed: %w", blocked, d, err)
		}
		taken = append(taken, d)
		release(b.Target)
	}
	forget(repo)
	if _, err := configOf(ctx, repo); err != nil {
		return blocked, taken, fmt.Errorf("%v; with %s taken out, still: %w", blocked, strings.Join(taken, "; "), err)
	}
	return blocked, taken, nil
}
