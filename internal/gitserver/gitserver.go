// Package gitserver serves bare repositories over real git transports on
// 127.0.0.1 for tests: file://, git daemon with receive-pack enabled, and
// smart HTTP through git http-backend behind a net/http CGI handler; plus a
// server that accepts connections and never answers.
package gitserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Transports names the three real transports.
var Transports = []string{"file", "daemon", "http"}

// Server serves every bare repository under Root over one transport.
type Server struct {
	Transport string
	Root      string
	base      string // URL prefix
	port      int    // the git daemon's
	stop      func()
}

// URL is the address of the repository name (a directory under Root).
func (s *Server) URL(name string) string { return s.base + "/" + name }

// Stop ends the server now (a server going away); it is also done at the
// test's end.
func (s *Server) Stop() {
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// Require fails the test (under CI) or skips it when git or a transport
// helper is missing.
func Require(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		missing(t, "git is not installed")
	}
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		missing(t, "git --exec-path failed")
	}
	for _, h := range []string{"git-daemon", "git-http-backend"} {
		if _, err := os.Stat(filepath.Join(strings.TrimSpace(string(out)), h)); err != nil {
			missing(t, h+" is not installed (Debian: it ships with the git package)")
		}
	}
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s; CI must have it", why)
	}
	t.Skipf("%s; skipping", why)
}

// NewBare makes a bare repository name under root that accepts pushes
// over every transport (http.receivepack) and advertises atomic pushes.
func NewBare(t testing.TB, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	run(t, "", "git", "init", "--quiet", "--bare", "--initial-branch=main", dir)
	run(t, dir, "git", "config", "http.receivepack", "true")
	run(t, dir, "git", "config", "receive.advertiseAtomic", "true")
	return dir
}

// Start serves root over transport until the test ends.
func Start(t testing.TB, transport, root string) *Server {
	t.Helper()
	switch transport {
	case "file":
		return &Server{Transport: transport, Root: root, base: "file://" + root}
	case "daemon":
		return startDaemon(t, root)
	case "http":
		return startHTTP(t, root)
	}
	t.Fatalf("gitserver: unknown transport %q", transport)
	return nil
}

func startDaemon(t testing.TB, root string) *Server {
	t.Helper()
	for try := 0; try < 5; try++ {
		port := freePort(t)
		if kill := daemonAt(t, root, port); kill != nil {
			s := &Server{Transport: "daemon", Root: root, base: "git://127.0.0.1:" + strconv.Itoa(port), port: port}
			s.stop = kill
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("gitserver: git daemon did not start listening")
	return nil
}

// Restart serves a git daemon stopped by Stop again, at the same address
// (the server coming back).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if s.Transport != "daemon" || s.stop != nil {
		t.Fatalf("gitserver: Restart is for a stopped git daemon")
	}
	for try := 0; try < 50; try++ {
		if s.stop = daemonAt(t, s.Root, s.port); s.stop != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gitserver: git daemon did not listen on port %d again", s.port)
}

// daemonAt starts a git daemon serving root on port; it returns the
// function that stops it, nil when it did not start listening.
func daemonAt(t testing.TB, root string, port int) func() {
	t.Helper()
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--enable=receive-pack", "--export-all",
		"--base-path="+root, "--listen=127.0.0.1", "--port="+strconv.Itoa(port), "--informative-errors", root)
	cmd.SysProcAttr = daemonAttr()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("gitserver: start git daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_, _ = bufio.NewReader(stderr).WriteTo(discard{})
		_ = cmd.Wait()
		close(exited)
	}()
	kill := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	listening := false
	for deadline := time.Now().Add(5 * time.Second); !listening && time.Now().Before(deadline); {
		select {
		case <-exited:
			// Another process has the port (a restart too early).
			return nil
		default:
		}
		listening = waitPort(port, 200*time.Millisecond)
	}
	if !listening {
		kill()
		return nil
	}
	return kill
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func startHTTP(t testing.TB, root string) *Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("gitserver: git --exec-path: %v", err)
	}
	h := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Root: "/",
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gitserver: listen: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	s := &Server{Transport: "http", Root: root, base: "http://" + ln.Addr().String()}
	s.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
	}
	t.Cleanup(s.Stop)
	return s
}

// Hang starts a TCP listener on 127.0.0.1 that accepts connections and
// never answers; it returns its host:port.
func Hang(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gitserver: listen: %v", err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(done)
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gitserver: listen: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return port
}

func waitPort(port int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Hook installs a server-side hook (pre-receive, update...) in the bare
// repository dir.
func Hook(t testing.TB, dir, name, script string) {
	t.Helper()
	path := filepath.Join(dir, "hooks", name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// RemoveHook deletes a hook.
func RemoveHook(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "hooks", name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

// Refs lists the bare repository's refs (name -> id).
func Refs(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := run(t, dir, "git", "for-each-ref", "--format=%(objectname) %(refname)")
	refs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs
}

func run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Clone clones url into dir as a "machine": its own clone with an identity.
func Clone(t testing.TB, url, dir string) {
	t.Helper()
	run(t, "", "git", "clone", "--quiet", "--origin", "origin", url, dir)
	run(t, dir, "git", "config", "user.name", "Machine "+filepath.Base(dir))
	run(t, dir, "git", "config", "user.email", filepath.Base(dir)+"@example.com")
}

// Seed creates a repository at dir with the given files committed on
// main, and pushes it to url (unless url is "").
func Seed(t testing.TB, dir, url string, files map[string]string) {
	t.Helper()
	run(t, "", "git", "init", "--quiet", "--initial-branch=main", dir)
	run(t, dir, "git", "config", "user.name", "Seed")
	run(t, dir, "git", "config", "user.email", "seed@example.com")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "commit", "--quiet", "-m", "seed")
	if url != "" {
		run(t, dir, "git", "push", "--quiet", url, "main:main")
	}
}

// Describe names a server for test names.
func (s *Server) String() string { return fmt.Sprintf("%s(%s)", s.Transport, s.base) }
