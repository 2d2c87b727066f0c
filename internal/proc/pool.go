package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Pool keeps supervisors alive between commands, so a loop that runs an
// agent every iteration starts wiggum's binary once per run (per worker in
// parallel), not once per attempt. Each supervisor runs one command at a
// time and supervises it exactly as a one-shot one does (its own process
// group, signals passed on, SIGKILL after the grace period, every
// descendant reaped, the held lock closed only after that); it ends when
// the pool is closed or wiggum dies. A nil *Pool is no pool.
type Pool struct {
	mu     sync.Mutex
	idle   []*server
	closed bool
}

// NewPool returns an empty pool; supervisors start on first use.
func NewPool() *Pool { return &Pool{} }

// Warm starts n supervisors in the background and keeps them idle, so
// that the first n commands do not wait for wiggum's binary to start (a
// parallel run warms one per worker while it makes their worktrees). One
// that cannot start is left out: a command then starts its own and says
// why. Unused ones end with Close.
func (p *Pool) Warm(n int) {
	if p == nil || !pooling {
		return
	}
	for range n {
		go func() {
			if s, err := spawnServer(); err == nil {
				p.put(s)
			}
		}()
	}
}

// Close ends the idle supervisors and waits for them; a busy one ends when
// its command does.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	// Each ends on its own once its socket closes; waiting for them one
	// after another would add their exits up at the end of every run.
	var wg sync.WaitGroup
	for _, s := range idle {
		wg.Go(s.close)
	}
	wg.Wait()
}

// server is one pooled supervisor and wiggum's end of its socket.
type server struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	wmu  sync.Mutex
	buf  []byte
}

func (s *server) send(m poolMsg, files []*os.File) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writePoolMsg(s.conn, m, files)
}

func (s *server) recv() (poolMsg, error) {
	n, err := s.conn.Read(s.buf)
	if err != nil {
		return poolMsg{}, err
	}
	if n == 0 {
		return poolMsg{}, errors.New("supervisor closed its socket")
	}
	var m poolMsg
	if err := json.Unmarshal(s.buf[:n], &m); err != nil {
		return m, fmt.Errorf("supervisor: %w", err)
	}
	return m, nil
}

// close ends the supervisor: its socket's end is its signal to exit.
func (s *server) close() {
	s.conn.Close()
	_ = s.cmd.Wait()
}

func (p *Pool) get() (*server, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return s, nil
	}
	p.mu.Unlock()
	return spawnServer()
}

func (p *Pool) put(s *server) {
	p.mu.Lock()
	if !p.closed {
		p.idle = append(p.idle, s)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	s.close()
}

func spawnServer() (*server, error) {
	self, err := selfPath()
	if err != nil {
		return nil, fmt.Errorf("find wiggum's own binary: %w", err)
	}
	fds, err := socketpair()
	if err != nil {
		return nil, fmt.Errorf("supervisor socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "pool"), os.NewFile(uintptr(fds[1]), "pool")
	defer theirs.Close()
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, fmt.Errorf("supervisor socket: %w", err)
	}
	cmd := exec.Command(self, SuperviseArg, serveArg)
	cmd.Dir = "/"
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = supervisorAttr()
	if err := cmd.Start(); err != nil {
		c.Close()
		return nil, fmt.Errorf("start the supervisor: %w", err)
	}
	return &server{cmd: cmd, conn: c.(*net.UnixConn), buf: make([]byte, 4096)}, nil
}

// ErrSupervisorLost is a supervisor of wiggum's that ended before its
// command (the OOM killer, a stray kill): the command was killed with it,
// and its end says nothing of its work.
var ErrSupervisorLost = errors.New("wiggum's supervisor was killed")

// errNotPooled: this command cannot go through the pool (an output that is
// not a file, a message too large); Start uses a one-shot supervisor.
var errNotPooled = errors.New("not pooled")

// start runs argv on a pooled supervisor.
func (p *Pool) start(argv []string, opts Options, grace time.Duration) (*Process, error) {
	m := poolMsg{Op: "start", Argv: argv, Dir: opts.Dir, Env: opts.Env, Grace: grace}
	if m.Env == nil {
		m.Env = os.Environ()
	}
	var files []*os.File
	for _, io := range []struct {
		name string
		v    any
	}{{"stdin", opts.Stdin}, {"stdout", opts.Stdout}, {"stderr", opts.Stderr}} {
		if io.v == nil {
			continue
		}
		f, ok := io.v.(*os.File)
		if !ok || f == nil {
			return nil, errNotPooled
		}
		m.Fds, files = append(m.Fds, io.name), append(files, f)
	}
	if opts.Hold != nil {
		m.Fds, files = append(m.Fds, "hold"), append(files, opts.Hold)
	}
	s, err := p.get()
	if err != nil {
		return nil, err
	}
	if err := s.send(m, files); err != nil {
		// A supervisor that died idle, or a message it cannot take: this
		// command goes elsewhere.
		if errors.Is(err, errTooBig) {
			p.put(s) // nothing was sent
			return nil, errNotPooled
		}
		s.close()
		return nil, fmt.Errorf("%w: %v", errNotPooled, err)
	}
	r, err := s.recv()
	if err != nil {
		// It died before it answered (killed idle, say): the command,
		// if it started, died with it (its death signal); it goes to a
		// one-shot supervisor instead.
		s.close()
		return nil, fmt.Errorf("%w: no answer to start %s: %v", errNotPooled, argv[0], err)
	}
	if r.Op != "started" {
		// It took the descriptors and then failed: nothing ran.
		s.close()
		return nil, fmt.Errorf("supervisor: no answer to start %s: answered %s", argv[0], r.Op)
	}
	pr := &Process{pid: r.Pid, done: make(chan struct{})}
	if r.Pid == 0 {
		// The command could not start; the supervisor said why on its
		// stderr, as a one-shot supervisor does.
		pr.code = r.Code
		if errno := syscall.Errno(r.Errno); wantOfResource(errno) {
			pr.err = &StartError{Command: argv[0], Err: errno}
		}
		close(pr.done)
		p.put(s)
		return pr, nil
	}
	pr.signal = func(sig syscall.Signal) { _ = s.send(poolMsg{Op: "signal", Sig: int(sig)}, nil) }
	go func() {
		r, err := s.recv()
		if err != nil || r.Op != "exited" {
			s.close()
			// What the command left of its group goes too: nothing
			// would reap or stop it now.
			_ = syscall.Kill(-pr.pid, syscall.SIGKILL)
			pr.err = fmt.Errorf("%w before %s ended (%v)", ErrSupervisorLost, argv[0], errOr(err, r.Op))
		} else {
			pr.code = r.Code
			p.put(s)
		}
		close(pr.done)
	}()
	return pr, nil
}

func errOr(err error, op string) any {
	if err != nil {
		return err
	}
	return "answered " + op
}
