// Package remote lets wiggum runs on many machines share one plan through
// the git server they already push to: a story is claimed by creating
// refs/wiggum/claims/<story> there only if it is absent, kept by
// compare-and-swap renewals, and landed by one atomic push that moves the
// target branch (with the plan tick inside the landing commit) and deletes
// the claim, so no story lands twice and no pushed commit is lost.
package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/redact"
)

// Ref namespaces on the server.
const (
	ClaimsPrefix    = "refs/wiggum/claims/"
	ConflictsPrefix = "refs/wiggum/conflicts/"
	BranchPrefix    = "refs/heads/wiggum/"
)

// Defaults for Options.
const (
	DefaultTimeout = 60 * time.Second
	DefaultLease   = 5 * time.Minute
	// MinLease keeps renewals (every third of the lease) from flooding the server.
	MinLease = time.Second
)

// Options tune Open.
type Options struct {
	// Timeout bounds every network call (fetch, push, ls-remote); 0 is DefaultTimeout.
	Timeout time.Duration
	// Lease is how long a claim stays live without a renewal; 0 is DefaultLease.
	Lease time.Duration
	// Run names this run in the claims it makes.
	Run string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Remote is one named remote of a local clone, used as the coordinator of
// the machines that share it.
type Remote struct {
	Repo    *git.Repo
	Name    string
	URL     string
	Me      Machine
	Lease   time.Duration
	Timeout time.Duration
	Run     string
	// Workers is how many stories this process works on at once
	// (written in its claims; 0 says one).
	Workers int
	now     func() time.Time

	// fetchMu serialises fetches: they write this clone's
	// remote-tracking refs, and two at once would fight over ref locks.
	fetchMu sync.Mutex
	stats   Stats
	obj     objects
	// daemon is the git:// server connected to by this process; nil when
	// git connects itself.
	daemon *daemon
	// noSendPack: the daemon lacks what sendPack needs; git pushes.
	noSendPack atomic.Bool
	// landGuess and claimGuess decide whether a landing or a claim starts
	// from what this clone last saw of the server instead of fetching.
	landGuess, claimGuess guess

	// seen times each claim's lease from when this process first saw its
	// value (sighted); clock, when set (tests), stands in for the
	// monotonic clock it is read on.
	seenMu sync.Mutex
	seen   map[string]sighting
	clock  func() time.Time
}

// guess is whether a call may start from this clone's last view of the
// server rather than fetch it first: a wrong view costs one push the
// server refuses (the leases hold every update to what the view saw),
// then a fetch. A machine alone, or whose own landing moved the target
// last, sees right and saves the fetch; after a wrong view the next calls
// fetch first - two, then twice as many after each further wrong view, up
// to 32 (a busy fleet, where the view is nearly always old) - then it
// guesses again.
type guess struct {
	mu         sync.Mutex
	skip, next int
}

// try reports whether to start from the last view.
func (g *guess) try() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.skip > 0 {
		g.skip--
		return false
	}
	return true
}

// missed notes a view that was wrong.
func (g *guess) missed() {
	g.mu.Lock()
	g.next = min(max(2*g.next, 2), 32)
	g.skip = g.next
	g.mu.Unlock()
}

// hit notes a view that was right.
func (g *guess) hit() {
	g.mu.Lock()
	g.next = 0
	g.mu.Unlock()
}

// Stats counts this process's network calls, for benchmarks and events.
type Stats struct {
	mu      sync.Mutex
	Fetches int
	Pushes  int
}

// Counts returns the fetches and pushes made so far.
func (r *Remote) Counts() (fetches, pushes int) {
	r.stats.mu.Lock()
	defer r.stats.mu.Unlock()
	return r.stats.Fetches, r.stats.Pushes
}

// urlShown reports whether s is a URL rather than a remote's name (a
// scheme's "://", or scp's "host:path"), and s fit to print: what may be a
// secret in it - a token or password before the host - masked.
func urlShown(s string) (string, bool) {
	if !strings.Contains(s, "://") {
		// scp-like user@host:path, or host:path: a remote name holds
		// no colon (git refuses one in a remote's name).
		return s, strings.Contains(s, ":") && !strings.ContainsAny(s, " \t\n")
	}
	return redact.Text(s), true
}

// BadRemoteError is a remote name the clone does not have, or an option
// out of range; nothing was changed.
type BadRemoteError struct{ Msg string }

func (e *BadRemoteError) Error() string { return e.Msg }

// Open checks that repo has a remote called name and reads this machine's
// identity.
func Open(ctx context.Context, repo *git.Repo, name string, opts Options) (*Remote, error) {
	if shown, ok := urlShown(name); ok {
		return nil, &BadRemoteError{Msg: fmt.Sprintf("remote: --remote takes the name of one of this clone's remotes, not a URL (%s): add it with git remote add NAME URL (git remote -v lists those there are), then pass --remote NAME", shown)}
	}
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \t\n\x00") {
		return nil, &BadRemoteError{Msg: fmt.Sprintf("remote: %q is not a remote name", name)}
	}
	url, err := repo.Line(ctx, "remote", "get-url", "--push", name)
	if err != nil {
		return nil, &BadRemoteError{Msg: fmt.Sprintf("remote: this clone has no remote %q (git remote -v lists them; add one with git remote add %s URL)", name, name)}
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Lease == 0 {
		opts.Lease = DefaultLease
	}
	if opts.Timeout < 0 {
		return nil, &BadRemoteError{Msg: "remote: the network timeout cannot be negative"}
	}
	if opts.Lease < MinLease {
		return nil, &BadRemoteError{Msg: fmt.Sprintf("remote: a claim lease must be at least %s, got %s", MinLease, opts.Lease)}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	me, err := Identify(repo)
	if err != nil {
		return nil, err
	}
	// A landing commit goes into the user's history: signed when git
	// signs their commits here.
	if repo.Sign, err = repo.SignsCommits(ctx); err != nil {
		return nil, fmt.Errorf("remote: read commit.gpgSign: %w", err)
	}
	r := &Remote{Repo: repo, Name: name, URL: url, Me: me, Lease: opts.Lease, Timeout: opts.Timeout, Run: opts.Run, now: opts.Now}
	r.obj = r.openObjects(ctx)
	r.daemon = openDaemon(ctx, repo, name, url)
	return r, nil
}

// NetworkError is a network call that failed or did not finish in time.
// The call changed nothing in the local clone.
type NetworkError struct {
	Op, Remote string
	Timeout    bool
	Detail     string
}

func (e *NetworkError) Error() string {
	if e.Timeout {
		return fmt.Sprintf("remote %s: %s did not finish in time and was stopped (the server hangs or the network is down); nothing changed locally", e.Remote, e.Op)
	}
	return fmt.Sprintf("remote %s: %s failed: %s", e.Remote, e.Op, e.Detail)
}

// LandLater reports that a landing that failed so decided nothing about
// its story: the finished work can land as it is once the server answers.
func (e *NetworkError) LandLater() bool { return true }

// ServerRejectedError is a push the server refused for its own reasons (a
// hook, a protected ref, a permission); nothing changed on the server.
type ServerRejectedError struct {
	Op, Remote string
	Ref        string
	Reason     string
	Message    string // what the server said
}

func (e *ServerRejectedError) Error() string {
	msg := fmt.Sprintf("remote %s: the server refused %s (%s: %s)", e.Remote, e.Op, e.Ref, e.Reason)
	if m := strings.TrimSpace(e.Message); m != "" {
		msg += ": " + firstLines(m, 3)
	}
	return msg + "; check that it allows refs under refs/wiggum/ and atomic pushes"
}

// LandLater reports that a landing the server refused so decided nothing
// about its story: the finished work can land as it is once the server's
// rule allows it.
func (e *ServerRejectedError) LandLater() bool { return true }

// IsNetwork reports whether err is a network failure or timeout.
func IsNetwork(err error) bool {
	var ne *NetworkError
	return errors.As(err, &ne)
}

// net runs a git command that talks to the server, bounded by r.Timeout:
// it runs in its own process group, which is killed whole on the timeout
// (an ssh or a remote helper included). For http, a transfer slower than
// 1 KB/s for the timeout also ends it, inside git.
//
// service is the server side the command talks to (uploadPack or
// receivePack); args name the remote as remoteArg. A git:// server is
// connected to by this process (see daemon), unless service is "": then
// git connects itself.
func (r *Remote) net(ctx context.Context, op, service string, stdin []byte, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	secs := strconv.Itoa(max(1, int(r.Timeout/time.Second)))
	full := []string{"-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=" + secs}
	remote := r.Name
	var sock *os.File
	if r.daemon != nil && service == "" {
		// git's own connection, protocol v0: an ls-remote sends nothing
		// before the server's answer, so nothing waits for an ACK, and
		// no helper process is started.
		full = append(full, "-c", "protocol.version=0")
	}
	if r.daemon != nil && service != "" {
		f, err := r.daemon.connect(ctx, service)
		if err != nil {
			if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return "", "", &NetworkError{Op: op, Remote: r.Name, Timeout: true}
			}
			return "", "", &NetworkError{Op: op, Remote: r.Name, Detail: err.Error()}
		}
		// The request is made: git speaks protocol v0 on the socket,
		// which it inherits as fd 3.
		sock, remote = f, "fd::3/"+r.Name
		full = append(full, "-c", "protocol.version=0")
	}
	for _, a := range args {
		if a == remoteArg {
			a = remote
		}
		full = append(full, a)
	}
	cmd := exec.Command(git.Binary(), full...)
	cmd.Dir = r.Repo.Root
	cmd.Env = append(git.CleanEnv(), "GIT_SSH_COMMAND="+sshCommand())
	cmd.SysProcAttr = diesWithUs(true)
	if sock != nil {
		cmd.ExtraFiles = []*os.File{sock}
	}
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if sock != nil {
		// Only git holds the connection now: it ends with git.
		sock.Close()
	}
	if err != nil {
		return "", "", &NetworkError{Op: op, Remote: r.Name, Detail: err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		timeout := errors.Is(ctx.Err(), context.DeadlineExceeded)
		if !timeout {
			return stdout.String(), stderr.String(), ctx.Err()
		}
		return stdout.String(), stderr.String(), &NetworkError{Op: op, Remote: r.Name, Timeout: true}
	}
	if err != nil {
		return stdout.String(), stderr.String(), &git.Error{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), stderr.String(), nil
}

// sshCommand never lets ssh ask for a password or a host key: an unattended
// machine would wait forever.
func sshCommand() string {
	if c := os.Getenv("GIT_SSH_COMMAND"); c != "" {
		return c
	}
	return "ssh -o BatchMode=yes"
}

// transportError turns a failed network git command into a NetworkError
// when the failure is the connection, not a refusal.
func (r *Remote) transportError(op string, err error) error {
	var ge *git.Error
	if !errors.As(err, &ge) {
		return err
	}
	return &NetworkError{Op: op, Remote: r.Name, Detail: firstLines(strings.TrimSpace(ge.Stderr), 3)}
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	// git's warnings and hints come before its error, and may run over
	// several lines: the error is what the message is for.
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal: ") || strings.HasPrefix(l, "error: ") {
			lines = lines[i:]
			break
		}
	}
	if len(lines) > n {
		lines = lines[:n]
	}
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " / ")
}
