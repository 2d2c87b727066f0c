package remote

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// remoteArg stands for the remote in the arguments of a network git
// command: the remote's name, or the connection this process opened.
const remoteArg = "\x00remote"

// Services of a git server, as a git:// request names them.
const (
	uploadPack  = "git-upload-pack"  // fetch, ls-remote
	receivePack = "git-receive-pack" // push
)

// daemon is a git:// server that this process connects to itself and
// hands to git as an open socket (git's fd:: transport). git connects
// git:// without TCP_NODELAY, and both its protocol v2 requests and a
// push's pack are written in several small pieces: on every round trip
// the later pieces wait for the server's delayed ACK (40 ms on Linux,
// most of a loopback call: a git daemon ls-remote takes ~50 ms, ~6 ms
// without the wait). Go's connections have TCP_NODELAY set.
type daemon struct {
	addr string // host:port to dial
	host string // the host= of the request, as the URL spells it
	path string // the repository's path on the server
}

// openDaemon returns the git:// server of remote name when this process
// can connect to it itself: one URL, the same for fetch and push, with no
// proxy configured and git's fd:: transport installed. nil otherwise (git
// connects as usual).
func openDaemon(ctx context.Context, repo *git.Repo, name, pushURL string) *daemon {
	d := parseDaemonURL(pushURL)
	if d == nil || os.Getenv("GIT_PROXY_COMMAND") != "" {
		return nil
	}
	fetchURLs, err := repo.Run(ctx, "remote", "get-url", "--all", name)
	if err != nil || strings.TrimSpace(fetchURLs) != pushURL {
		return nil
	}
	pushURLs, err := repo.Run(ctx, "remote", "get-url", "--push", "--all", name)
	if err != nil || strings.TrimSpace(pushURLs) != pushURL {
		return nil
	}
	if proxy, _ := repo.Run(ctx, "config", "--get-all", "core.gitproxy"); strings.TrimSpace(proxy) != "" {
		return nil
	}
	exe, err := repo.Line(ctx, "--exec-path")
	if err != nil {
		return nil
	}
	if st, err := os.Stat(filepath.Join(exe, "git-remote-fd")); err != nil || st.IsDir() {
		return nil
	}
	return d
}

// parseDaemonURL reads a git:// URL; nil for any other, or one whose path
// git might spell differently on the wire (escapes, a query).
func parseDaemonURL(raw string) *daemon {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "git" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		u.Path == "" || strings.ContainsAny(raw, "%\\ ") || u.RawPath != "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "9418"
	}
	return &daemon{addr: net.JoinHostPort(u.Hostname(), port), host: u.Host, path: u.Path}
}

// connect opens a connection to the daemon and requests service on it, as
// git would; the returned file is the socket (blocking, for a child).
func (d *daemon) connect(ctx context.Context, service string) (*os.File, error) {
	conn, err := d.dial(ctx, service)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.File()
}

// dial opens a connection to the daemon and requests service on it.
func (d *daemon) dial(ctx context.Context, service string) (*net.TCPConn, error) {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, err
	}
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("not a TCP connection")
	}
	req := service + " " + d.path + "\x00host=" + d.host + "\x00"
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetWriteDeadline(deadline)
	} else {
		_ = conn.SetWriteDeadline(time.Now().Add(DefaultTimeout))
	}
	if _, err := fmt.Fprintf(conn, "%04x%s", len(req)+4, req); err != nil {
		conn.Close()
		return nil, err
	}
	_ = conn.SetWriteDeadline(time.Time{})
	return tc, nil
}
