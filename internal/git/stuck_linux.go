package git

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

// watchStuck looks at the running git p every StuckTick (see stuck.go)
// until the func it returns is called; that func returns what p was
// stopped for, or nil. Looking costs nothing for the commands that end
// within a tick - nearly all - and, past that, a read of a few /proc
// files of p and each process it started, once a tick.
func watchStuck(p *os.Process) func() *Stuck {
	w := &stuckWatch{p: p, start: time.Now()}
	w.mu.Lock()
	w.timer = time.AfterFunc(StuckTick, w.look)
	w.mu.Unlock()
	return func() *Stuck {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
		w.timer.Stop()
		return w.found
	}
}

type stuckWatch struct {
	p     *os.Process
	start time.Time

	mu    sync.Mutex
	timer *time.Timer
	done  bool
	prev  map[string]time.Time // what was waited on at the last look ("pid op path"), and when first seen
	found *Stuck
}

func (w *stuckWatch) look() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done || w.found != nil {
		return
	}
	now := time.Now()
	seen := map[string]time.Time{}
	for _, pid := range family(w.p.Pid) {
		if !isGit(pid) {
			// A hook, a filter, a signing program: the person's code,
			// which may read a FIFO another process writes to slowly
			// (a progress pipe) - not a git opening a file by name.
			continue
		}
		s, ok := fifoWait(pid)
		if !ok {
			continue
		}
		key := strconv.Itoa(pid) + " " + s.Op + " " + s.Path
		first, before := w.prev[key]
		if !before {
			seen[key] = now
			continue
		}
		s.For = now.Sub(first)
		if pid == w.p.Pid {
			s.Cmd = "" // the command's own git, which its error names
		}
		w.found = &s
		if pid != w.p.Pid {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
		_ = w.p.Signal(syscall.SIGTERM) // git takes its lock files away
		p := w.p
		time.AfterFunc(5*time.Second, func() { _ = p.Kill() })
		return
	}
	w.prev = seen
	w.timer.Reset(StuckTick)
}

// family is pid and every process it started, and they started, found
// by their parent in /proc (the processes git starts: a submodule's git,
// a filter, a hook - only the gits among them are looked at).
func family(pid int) []int {
	pids := []int{pid}
	parent := map[int]int{}
	layout.EachProcess(func(p int, _ string, pp int) { parent[p] = pp })
	for i := 0; i < len(pids); i++ {
		for p, pp := range parent {
			if pp == pids[i] {
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// isGit reports whether process pid runs git (git, or one of its own
// programs: git-upload-pack, git-remote-http, ...).
func isGit(pid int) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	name := strings.TrimSpace(string(comm))
	return err == nil && (name == "git" || strings.HasPrefix(name, "git-"))
}

// fifoWait reports whether process pid waits, in the kernel, to open a
// FIFO (no writer has opened it: wait_for_partner) or to read one it has
// open (a writer holds it open and writes nothing), and which FIFO.
func fifoWait(pid int) (Stuck, bool) {
	proc := "/proc/" + strconv.Itoa(pid)
	wchan, err := os.ReadFile(proc + "/wchan")
	if err != nil {
		return Stuck{}, false
	}
	var op string
	switch ch := string(wchan); {
	case ch == "wait_for_partner":
		op = "opening"
	case strings.Contains(ch, "pipe_read") || ch == "pipe_wait":
		op = "reading"
	default:
		return Stuck{}, false
	}
	nr, args, ok := syscallOf(proc)
	if !ok {
		return Stuck{}, false
	}
	var path string
	switch {
	case op == "opening" && nr == unix.SYS_OPENAT:
		name, ok := stringAt(proc, args[1])
		if !ok {
			return Stuck{}, false
		}
		path = name
		if !filepath.IsAbs(name) {
			dir := proc + "/cwd"
			if fd := int32(uint32(args[0])); fd != unix.AT_FDCWD {
				dir = proc + "/fd/" + strconv.Itoa(int(fd))
			}
			d, err := os.Readlink(dir)
			if err != nil {
				return Stuck{}, false
			}
			path = filepath.Join(d, name)
		}
	case op == "reading" && (nr == unix.SYS_READ || nr == unix.SYS_READV || nr == unix.SYS_PREAD64):
		// An anonymous pipe (what wiggum feeds git) reads as
		// "pipe:[inode]", a FIFO as its path.
		link, err := os.Readlink(proc + "/fd/" + strconv.FormatUint(args[0], 10))
		if err != nil || !filepath.IsAbs(link) {
			return Stuck{}, false
		}
		path = link
	default:
		return Stuck{}, false
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return Stuck{}, false
	}
	s := Stuck{Path: path, Op: op, Pid: pid}
	if cl, err := os.ReadFile(proc + "/cmdline"); err == nil {
		s.Cmd = strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))
	}
	return s, true
}

// syscallOf is the system call process proc (/proc/PID) is blocked in,
// and its arguments, from /proc/PID/syscall ("NR ARG1 ... ARG6 SP PC").
func syscallOf(proc string) (nr uintptr, args [6]uint64, ok bool) {
	b, err := os.ReadFile(proc + "/syscall")
	if err != nil {
		return 0, args, false
	}
	f := strings.Fields(string(b))
	if len(f) < 7 {
		return 0, args, false // "running", or -1 and no arguments
	}
	n, err := strconv.ParseUint(f[0], 10, 32)
	if err != nil {
		return 0, args, false
	}
	for i := range args {
		v, err := strconv.ParseUint(strings.TrimPrefix(f[i+1], "0x"), 16, 64)
		if err != nil {
			return 0, args, false
		}
		args[i] = v
	}
	return uintptr(n), args, true
}

// stringAt reads the NUL-terminated string at addr in process proc's
// memory (a path a system call was given).
func stringAt(proc string, addr uint64) (string, bool) {
	f, err := os.Open(proc + "/mem")
	if err != nil {
		return "", false
	}
	defer f.Close()
	buf := make([]byte, unix.PathMax)
	n, _ := f.ReadAt(buf, int64(addr))
	i := bytes.IndexByte(buf[:n], 0)
	if i <= 0 {
		return "", false
	}
	return string(buf[:i]), true
}
