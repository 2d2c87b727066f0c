// Package sandboxdirs finds and takes back the empty directories codex's
// Linux sandbox leaves.
//
// With --sandbox workspace-write, codex mounts an empty read-only
// directory over each of Names missing in every root a command may write
// (the work tree, /tmp), making them on the disk first and taking them
// away only when the command ends normally. A command it killed, or one
// that outlived its wait, leaves them (openai/codex#31599) - an empty
// /tmp/.git fails go build's VCS stamping in every checkout under /tmp.
// The loop takes back what an attempt of the built-in codex agent left;
// the conformance suite what its codex runs left.
package sandboxdirs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Names are the directories codex's sandbox mounts over where missing.
var Names = []string{".git", ".agents", ".codex", ".aws"}

// Issue is codex's issue for them, named with what is taken back.
const Issue = "openai/codex#31599"

// Missing lists, under each root, the Names that do not exist: those a
// codex run may leave.
func Missing(roots []string) []string {
	var missing []string
	for _, root := range roots {
		for _, name := range Names {
			p := filepath.Join(root, name)
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, p)
			}
		}
	}
	return missing
}

// TakeBack removes those of missing (Missing before the run) that are now
// an empty directory no process has a mount on, and lists them. rmdir
// only: anything in one, or a file, stays.
func TakeBack(missing []string) []string {
	var removed []string
	for _, p := range missing {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !emptyDir(p) || mounted(p, fi) {
			continue
		}
		if syscall.Rmdir(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

func emptyDir(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return err == io.EOF
}

// mounted reports whether p (fi) is a mount point here - on another
// device than its parent - or in any process's mounts this user can read:
// a live codex sandbox's (another worker's, another session's) is in its
// own mount namespace, where removing the directory would take its
// read-only mount away.
func mounted(p string, fi fs.FileInfo) bool {
	parent, err := os.Stat(filepath.Dir(p))
	if err != nil {
		return true
	}
	st, ok1 := fi.Sys().(*syscall.Stat_t)
	pst, ok2 := parent.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || st.Dev != pst.Dev {
		return true
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && MountPoints(pid)[p] {
			return true
		}
	}
	return false
}

// MountPoints is the set of mount points in process pid's mount table
// (empty when it cannot be read).
func MountPoints(pid int) map[string]bool {
	points := map[string]bool{}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		return points
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint ...; the mount point's
		// blanks are written \040.
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			points[unescapeMount(fields[4])] = true
		}
	}
	return points
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
