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

// Cat is one `git cat-file` kept running, so a command that reads objects
// in rounds (each round's names known only from the last one's answers, as
// when walking two trees) starts git once. It speaks --batch-command
// (git 2.36 and later), which can also tell an object's size without its
// content, and plain --batch on an older git. git starts at the first
// read; Close it.
type Cat struct {
	ctx    context.Context
	root   string
	env    []string // the ceiling (Repo.env)
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	plain  bool  // --batch: this git has no --batch-command
	err    error // the first failure; every later read returns it
}

// Cat returns a reader of the repository's objects.
func (r *Repo) Cat(ctx context.Context) *Cat { return &Cat{ctx: ctx, root: r.Root, env: r.env(nil)} }

// Start starts git now rather than at the first read, so that its
// start-up overlaps what the caller does next (a status, say). A failure
// to start is returned by the first read.
func (c *Cat) Start() {
	if c.cmd == nil && c.err == nil {
		c.err = c.start()
	}
}

func (c *Cat) args() []string {
	if c.plain {
		return []string{"cat-file", "--batch"}
	}
	return []string{"cat-file", "--batch-command"}
}

func (c *Cat) start() error {
	c.stderr.Reset()
	c.cmd = command(c.ctx, c.root, c.env, c.args()...)
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
		return &Error{Args: c.args(), Err: err}
	}
	return nil
}

// Read reads each name (any revision expression, as Batch takes): an
// Object per name, ID "" for a name that names no object.
func (c *Cat) Read(names ...string) ([]Object, error) {
	return c.ask("contents", names)
}

// Sizes tells each named object's size without reading its content (-1
// for a name that names no object); ok is false when this git cannot
// (no --batch-command).
func (c *Cat) Sizes(names ...string) (sizes []int64, ok bool, err error) {
	if !c.plain && c.cmd == nil && c.err == nil {
		if c.err = c.start(); c.err != nil {
			return nil, false, c.err
		}
	}
	if c.plain {
		return nil, false, nil
	}
	objs, err := c.ask("info", names)
	if err != nil || c.plain {
		return nil, false, err
	}
	sizes = make([]int64, len(objs))
	for i, o := range objs {
		sizes[i] = o.Size
	}
	return sizes, true, nil
}

// ask sends one command per name and reads the answers.
func (c *Cat) ask(command string, names []string) ([]Object, error) {
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
		if !c.plain {
			in.WriteString(command + " ")
		}
		in.WriteString(n + "\n")
	}
	objs, err := c.exchange(in.String(), len(names), command == "contents")
	if err != nil && !c.plain && c.rejectedCommandMode() {
		// An older git: go on with plain --batch, which reads contents.
		c.plain = true
		if c.err = c.start(); c.err != nil {
			return nil, c.err
		}
		if command != "contents" {
			return nil, nil
		}
		return c.ask(command, names)
	}
	if err != nil {
		c.err = c.fail(err)
		return nil, c.err
	}
	return objs, nil
}

// exchange writes in while it reads n answers: neither side may wait for
// the other's pipe to drain.
func (c *Cat) exchange(in string, n int, contents bool) ([]Object, error) {
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c.in, in)
		wrote <- err
	}()
	objs := make([]Object, n)
	var err error
	for i := range n {
		if objs[i], err = c.next(contents); err != nil {
			break
		}
	}
	if err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			// git may be blocked writing answers no one reads, and the
			// names then blocked behind it: stop it before waiting for
			// them. (At the end of its output it has stopped already.)
			c.cmd.Process.Kill()
		}
		<-wrote
		return nil, err
	}
	if err := <-wrote; err != nil {
		return nil, err
	}
	return objs, nil
}

// rejectedCommandMode reports whether git stopped because it does not know
// --batch-command (it then exits 129 with its usage); it reaps git.
func (c *Cat) rejectedCommandMode() bool {
	c.in.Close()
	err := c.cmd.Wait()
	c.cmd = nil
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 129 && strings.Contains(c.stderr.String(), "batch-command")
}

// next reads one answer: "<id> <type> <size>\n", then with contents
// "<content>\n"; or "<name> missing\n" (or "ambiguous").
func (c *Cat) next(contents bool) (Object, error) {
	head, err := c.out.ReadString('\n')
	if err != nil {
		return Object{}, err
	}
	f := strings.Fields(head)
	if len(f) != 3 {
		if len(f) >= 2 && (f[len(f)-1] == "missing" || f[len(f)-1] == "ambiguous") {
			return Object{Size: -1}, nil
		}
		return Object{}, fmt.Errorf("git cat-file: bad header %q", strings.TrimSpace(head))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return Object{}, fmt.Errorf("git cat-file: bad header %q", strings.TrimSpace(head))
	}
	o := Object{ID: f[0], Type: f[1], Size: size}
	if !contents {
		return o, nil
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(c.out, data); err != nil {
		return Object{}, err
	}
	if data[size] != '\n' {
		return Object{}, fmt.Errorf("git cat-file: object %s not followed by a newline", f[0])
	}
	o.Data = data[:size]
	return o, nil
}

// fail stops git and names what went wrong, with git's own words when it
// said any.
func (c *Cat) fail(err error) error {
	if c.cmd != nil {
		c.in.Close()
		werr := c.cmd.Wait()
		c.cmd = nil
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if werr != nil {
				err = werr
			}
		}
	}
	return &Error{Args: c.args(), Stderr: c.stderr.String(), Err: err}
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
		return &Error{Args: c.args(), Stderr: c.stderr.String(), Err: err}
	}
	return nil
}
