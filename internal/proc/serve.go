package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/exitwait"
)

// serveArg, after SuperviseArg, puts the supervisor in pool mode: it runs
// one command after another, each sent by wiggum over the socket at fd 3,
// and supervises each exactly as a one-shot supervisor does its one. A loop
// pays for starting wiggum's binary once per run instead of once per
// attempt.
const serveArg = "serve"

// poolMsg is one message on a pool socket (a SOCK_SEQPACKET pair, so each
// is one datagram). wiggum sends start (with the command's descriptors
// attached, named by Fds, in order) and signal; the supervisor answers a
// start with started, then exited once the command's group is gone.
type poolMsg struct {
	Op    string        `json:"op"`
	Argv  []string      `json:"argv,omitempty"`
	Dir   string        `json:"dir,omitempty"`
	Env   []string      `json:"env,omitempty"`
	Grace time.Duration `json:"grace,omitempty"`
	Fds   []string      `json:"fds,omitempty"` // stdin, stdout, stderr, hold
	Sig   int           `json:"sig,omitempty"`
	Pid   int           `json:"pid,omitempty"`
	Code  int           `json:"code,omitempty"`
	Err   string        `json:"err,omitempty"`
	Errno int           `json:"errno,omitempty"` // of a start that failed

	files map[string]*os.File
}

// maxPoolMsg bounds one message: the command line and its environment.
// A larger one is not sent through the pool (Start falls back to a
// one-shot supervisor).
const maxPoolMsg = 192 << 10

func readPoolMsg(conn *net.UnixConn, buf, oob []byte) (poolMsg, error) {
	var m poolMsg
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return m, err
	}
	if n == 0 && oobn == 0 {
		return m, errors.New("pool socket closed")
	}
	var fds []int
	if oobn > 0 {
		cmsgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
		if perr == nil {
			for _, c := range cmsgs {
				if got, err := syscall.ParseUnixRights(&c); err == nil {
					fds = append(fds, got...)
				}
			}
		}
	}
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
	}
	if err := json.Unmarshal(buf[:n], &m); err != nil || len(fds) != len(m.Fds) {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return poolMsg{Op: "bad"}, nil
	}
	m.files = map[string]*os.File{}
	for i, name := range m.Fds {
		m.files[name] = os.NewFile(uintptr(fds[i]), name)
	}
	return m, nil
}

func writePoolMsg(conn *net.UnixConn, m poolMsg, files []*os.File) error {
	js, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(js) > maxPoolMsg {
		return errTooBig
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	_, _, err = conn.WriteMsgUnix(js, oob, nil)
	return err
}

var errTooBig = errors.New("command line and environment too large for the pool")

func closeFiles(files map[string]*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// serve is the pool supervisor's main loop. It exits when wiggum closes the
// socket or dies (the socket's end, or SIGTERM as the parent-death signal),
// after the command it runs, if any, and that command's group are gone.
func serve() int {
	syscall.CloseOnExec(3)
	f := os.NewFile(3, "pool")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "wiggum: supervisor: no pool socket:", err)
		return 2
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		return 2
	}
	defer conn.Close()
	becomeSubreaper()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	msgs := make(chan poolMsg)
	go func() {
		buf, oob := make([]byte, maxPoolMsg+1), make([]byte, syscall.CmsgSpace(4*4))
		for {
			m, err := readPoolMsg(conn, buf, oob)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- m
		}
	}()
	for {
		select {
		case s := <-sigs:
			// Idle: a terminal's ^C is wiggum's to handle; SIGTERM or
			// SIGHUP (wiggum's death among them) ends the supervisor.
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				return 0
			}
		case m, ok := <-msgs:
			if !ok {
				return 0
			}
			if m.Op != "start" {
				closeFiles(m.files)
				continue
			}
			if !serveOne(conn, m, msgs, sigs) {
				return 0
			}
		}
	}
}

// serveOne runs one command as Supervise does: in its own process group,
// signals passed on to the group (from the socket, or to this process),
// SIGKILL after the grace period, the group and whatever it left behind
// reaped, and only then the hold descriptor (the agent lock) closed and the
// exit reported. It says whether to serve another.
func serveOne(conn *net.UnixConn, m poolMsg, msgs <-chan poolMsg, sigs <-chan os.Signal) bool {
	hold := m.files["hold"]
	defer func() {
		if hold != nil {
			hold.Close()
		}
	}()
	grace := m.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	stderr := m.files["stderr"]
	fail := func(code int, err error) bool {
		if stderr != nil {
			fmt.Fprintf(stderr, "wiggum: cannot start %s: %v\n", m.Argv[0], err)
		}
		closeFiles(m.files)
		hold = nil
		var errno syscall.Errno
		errors.As(err, &errno)
		return writePoolMsg(conn, poolMsg{Op: "started", Code: code, Err: err.Error(), Errno: int(errno)}, nil) == nil
	}
	if len(m.Argv) == 0 {
		return fail(126, errors.New("no command"))
	}
	// The command is looked up as a one-shot supervisor, started in its
	// directory with its environment, looks it up: by that PATH, from there.
	if m.Dir != "" {
		if err := os.Chdir(m.Dir); err != nil {
			return fail(126, err)
		}
		// Between commands the supervisor pins no directory.
		defer os.Chdir("/")
	}
	path := ""
	for _, kv := range m.Env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path = kv[5:]
		}
	}
	os.Setenv("PATH", path)
	cmd := exec.Command(m.Argv[0], m.Argv[1:]...)
	cmd.Env = m.Env
	if f := m.files["stdin"]; f != nil {
		cmd.Stdin = f
	}
	if f := m.files["stdout"]; f != nil {
		cmd.Stdout = f
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	// Never the terminal's foreground: a pooled command's stdin is
	// wiggum's pipe (an interactive command runs under a one-shot
	// supervisor, which hands the terminal over and back).
	cmd.SysProcAttr, _ = childAttrOn(-1)
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return fail(code, err)
	}
	// The command has its own copies: ours would keep its output pipe open
	// after it exits.
	for name, f := range m.files {
		if name != "hold" {
			f.Close()
		}
	}
	pgid := cmd.Process.Pid
	if err := writePoolMsg(conn, poolMsg{Op: "started", Pid: pgid}, nil); err != nil {
		// wiggum is gone: end the command as its death would.
		msgs = nil
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	waited := make(chan error, 1)
	go func() {
		// Parked while the command runs, not a thread blocked in waitid.
		exitwait.For(cmd.Process)
		waited <- cmd.Wait()
	}()

	more := msgs != nil
	var killAt <-chan time.Time
	pass := func(sig syscall.Signal) {
		_ = syscall.Kill(-pgid, sig)
		if sig != syscall.SIGQUIT && killAt == nil {
			killAt = time.After(grace)
		}
	}
	if !more {
		killAt = time.After(grace)
	}
	var code int
loop:
	for {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			pass(sig)
			if sig == syscall.SIGTERM || sig == syscall.SIGHUP {
				more = false
			}
		case r, ok := <-msgs:
			if !ok {
				// wiggum died (or closed the pool mid-command): as a
				// one-shot supervisor on its parent's death.
				msgs, more = nil, false
				pass(syscall.SIGTERM)
				continue
			}
			closeFiles(r.files)
			if r.Op == "signal" && r.Sig > 0 {
				pass(syscall.Signal(r.Sig))
			}
		case <-killAt:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		case err := <-waited:
			code = exitCode(err)
			break loop
		}
	}
	reapGroup(pgid, grace, sigs)
	if hold != nil {
		hold.Close()
		hold = nil
	}
	err := writePoolMsg(conn, poolMsg{Op: "exited", Code: code}, nil)
	return more && err == nil
}
