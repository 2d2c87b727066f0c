package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Cat is one `git cat-file --batch` kept running, so a command that reads
// objects in rounds (each round's names known only from the last one's
// answers, as when walking two trees) starts git once. git starts at the
// first Read; Close it.
type Cat struct {
	ctx    context.Context
	root   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	err    error // the first failure; every later Read returns it
}

// Cat returns a reader of the repository's objects.
func (r *Repo) Cat(ctx context.Context) *Cat { return &Cat{ctx: ctx, root: r.Root} }

func (c *Cat) start() error {
	c.cmd = exec.CommandContext(c.ctx, binary(), "cat-file", "--batch")
	c.cmd.Args[0] = "git"
	c.cmd.Dir = c.root
	c.cmd.Env = CleanEnv()
	c.cmd.SysProcAttr = procAttr()
	c.cmd.Stderr = &c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err == nil {
		var out io.Reader
		if out, err = c.cmd.StdoutPipe(); err == nil {
			c.out = bufio.NewReaderSize(out, 64<<10)
			err = c.cmd.Start()
		}
	}
	if err != nil {
		c.cmd = nil
		return &Error{Args: []string{"cat-file", "--batch"}, Err: err}
	}
	return nil
}

// Read reads each name (any revision expression, as Batch takes): an
// Object per name, ID "" for a name that names no object.
func (c *Cat) Read(names ...string) ([]Object, error) {
	if c.err != nil {
		return nil, c.err
	}
	if c.cmd == nil {
		if c.err = c.start(); c.err != nil {
			return nil, c.err
		}
	}
	var in strings.Builder
	for _, n := range names {
		if strings.ContainsAny(n, "\n\r\x00") {
			return nil, fmt.Errorf("object name %q has a line break", n)
		}
		in.WriteString(n + "\n")
	}
	// The names go in while the answers come out: neither side may wait
	// for the other's pipe to drain.
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c.in, in.String())
		wrote <- err
	}()
	objs := make([]Object, len(names))
	var err error
	for i := range names {
		if objs[i], err = c.next(); err != nil {
			break
		}
	}
	if err != nil {
		// git may be blocked writing answers no one reads, and the names
		// then blocked behind it: stop it before waiting for them.
		c.cmd.Process.Kill()
		<-wrote
		c.err = c.fail(err)
		return nil, c.err
	}
	if err := <-wrote; err != nil {
		c.err = c.fail(err)
		return nil, c.err
	}
	return objs, nil
}

// next reads one answer: "<id> <type> <size>\n<content>\n", or
// "<name> missing\n" (or "ambiguous").
func (c *Cat) next() (Object, error) {
	head, err := c.out.ReadString('\n')
	if err != nil {
		return Object{}, err
	}
	f := strings.Fields(head)
	if len(f) != 3 {
		if len(f) >= 2 && (f[len(f)-1] == "missing" || f[len(f)-1] == "ambiguous") {
			return Object{}, nil
		}
		return Object{}, fmt.Errorf("git cat-file: bad header %q", strings.TrimSpace(head))
	}
	size, err := strconv.Atoi(f[2])
	if err != nil || size < 0 {
		return Object{}, fmt.Errorf("git cat-file: bad header %q", strings.TrimSpace(head))
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return Object{}, err
	}
	if data[size] != '\n' {
		return Object{}, fmt.Errorf("git cat-file: object %s not followed by a newline", f[0])
	}
	return Object{ID: f[0], Type: f[1], Data: data[:size]}, nil
}

// fail stops git and names what went wrong, with git's own words when it
// said any.
func (c *Cat) fail(err error) error {
	c.in.Close()
	werr := c.cmd.Wait()
	c.cmd = nil
	if werr == nil {
		werr = err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = werr
	}
	return &Error{Args: []string{"cat-file", "--batch"}, Stderr: c.stderr.String(), Err: err}
}

// Close ends git's input and waits for it to exit.
func (c *Cat) Close() error {
	if c == nil || c.cmd == nil {
		return nil
	}
	c.in.Close()
	err := c.cmd.Wait()
	c.cmd = nil
	if err != nil {
		return &Error{Args: []string{"cat-file", "--batch"}, Stderr: c.stderr.String(), Err: err}
	}
	return nil
}
