package loop

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// sandboxNames are the directories codex's sandbox (workspace-write) mounts
// an empty read-only directory over, in every root a command may write,
// where they are missing: it makes them on the disk first and takes them
// away only when the command ends normally. A command it killed, or one
// that outlived its wait, leaves them (openai/codex#31599) - an empty
// /tmp/.git fails go build's VCS stamping in every checkout under /tmp.
var sandboxNames = []string{".git", ".agents", ".codex", ".aws"}

// sandboxIssue is named with what the loop takes back.
const sandboxIssue = "openai/codex#31599"

// leavesSandboxDirs: the built-in agents whose sandbox leaves them. A
// --agent-cmd wrapping codex is not known to be codex: nothing is taken.
func leavesSandboxDirs(agent string) bool { return agent == "codex" }

// tempRoots are the temporary directories codex's sandbox may write:
// os.TempDir() and /tmp.
func tempRoots() []string {
	roots := []string{filepath.Clean(os.TempDir())}
	if roots[0] != "/tmp" {
		roots = append(roots, "/tmp")
	}
	return roots
}

// missingSandboxDirs lists, under each root, the sandboxNames that do not
// exist: those an attempt's codex may leave.
func missingSandboxDirs(roots []string) []string {
	var missing []string
	for _, root := range roots {
		for _, name := range sandboxNames {
			p := filepath.Join(root, name)
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, p)
			}
		}
	}
	return missing
}

// takeBackSandboxDirs removes those of missing (missingSandboxDirs before
// the attempt) that are now an empty directory no process has a mount on,
// and lists them. rmdir only: anything in one, or a file, stays.
func takeBackSandboxDirs(missing []string) []string {
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
		if _, err := strconv.Atoi(e.Name()); err == nil && mountsAt(filepath.Join("/proc", e.Name(), "mountinfo"), p) {
			return true
		}
	}
	return false
}

// mountsAt reports whether the mountinfo file lists a mount on p.
func mountsAt(mountinfo, p string) bool {
	f, err := os.Open(mountinfo)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint ...; the mount point's
		// blanks are written \040.
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == p {
			return true
		}
	}
	return false
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

// sandboxWatch is what an attempt of codex found missing before it ran.
type sandboxWatch struct {
	tree []string // in the tree the attempt runs in
}

// watchSandbox notes, for a codex attempt, which sandboxNames are missing
// in its tree, and - shared by a parallel run's workers - in the temporary
// directories: those are noted when the first codex attempt in flight
// starts, and looked at when the last ends, so no other attempt's live
// sandbox is in them then.
func (e *executor) watchSandbox() *sandboxWatch {
	if !leavesSandboxDirs(e.run.opts.Agent.Name) {
		return nil
	}
	r := e.run
	r.sandboxMu.Lock()
	if r.sandboxBusy == 0 {
		r.sandboxTemp = missingSandboxDirs(tempRoots())
	}
	r.sandboxBusy++
	r.sandboxMu.Unlock()
	return &sandboxWatch{tree: missingSandboxDirs([]string{e.st.Repo.Root})}
}

// takeBackSandbox removes what the attempt's codex left (takeBackSandboxDirs),
// saying so.
func (e *executor) takeBackSandbox(w *sandboxWatch) {
	if w == nil {
		return
	}
	removed := takeBackSandboxDirs(w.tree)
	r := e.run
	r.sandboxMu.Lock()
	r.sandboxBusy--
	if r.sandboxBusy == 0 {
		removed = append(removed, takeBackSandboxDirs(r.sandboxTemp)...)
		r.sandboxTemp = nil
	}
	r.sandboxMu.Unlock()
	for _, p := range removed {
		e.disp.printf("  codex's sandbox left empty %s: removed (%s)", p, sandboxIssue)
	}
}
