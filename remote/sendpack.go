package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// zeroID is git's "no object" in a push command.
const zeroID = "0000000000000000000000000000000000000000"

// errNoSendPack says the server lacks what sendPack needs; git pushes
// instead. Nothing was sent.
var errNoSendPack = errors.New("the server does not offer what a direct push needs")

// sendPack is a push to a git:// server spoken by this process on the
// connection it opens itself (receive-pack, protocol v0), instead of
// `git push` through git-remote-fd: the same commands, leases and report,
// without git's client and helper processes, and without waiting after
// the server's report for what the server runs next (its `gc --auto`).
// The objects are packed by `git pack-objects`, from the new values down
// to the expected ones (which the server has, when the leases hold).
//
// Each update's lease is checked against the server's advertisement, as
// git does it, and again by the server at update time: a command names
// the expected value as the ref's old value, which receive-pack verifies
// under the ref's lock (zero: the ref must not exist). Atomic pushes use
// receive-pack's atomic transaction. The result is pushRefs's.
func (r *Remote) sendPack(ctx context.Context, op string, ups []update, atomic bool) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	conn, err := r.daemon.dial(ctx, receivePack)
	if err != nil {
		return nil, r.netErr(ctx, op, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	br := bufio.NewReader(conn)

	adv, caps, err := readAdvertisement(br)
	if err != nil {
		return nil, r.netErr(ctx, op, err)
	}
	atomic = atomic && len(ups) > 1
	need := []string{"report-status", "side-band-64k", "ofs-delta"}
	if atomic {
		need = append(need, "atomic")
	}
	for _, u := range ups {
		if u.src == "" {
			need = append(need, "delete-refs")
		}
	}
	if f := caps["object-format"]; f != "" && f != "sha1" {
		need = append(need, "object-format=sha1")
	}
	for _, c := range need {
		if _, ok := caps[c]; !ok {
			_, _ = conn.Write([]byte("0000"))
			return nil, errNoSendPack
		}
	}

	// The leases against the advertisement.
	bad := map[string]string{}
	var cmds []update
	for _, u := range ups {
		have := adv[u.dst]
		if have != u.expect {
			bad[u.dst] = have
			continue
		}
		if u.src == u.expect {
			continue // unchanged: only its lease mattered
		}
		cmds = append(cmds, u)
	}
	if len(cmds) == 0 || (atomic && len(bad) > 0) {
		_, _ = conn.Write([]byte("0000"))
		return bad, nil
	}

	var req bytes.Buffer
	pack := false
	for i, u := range cmds {
		old, nw := orZero(u.expect), orZero(u.src)
		line := old + " " + nw + " " + u.dst
		if i == 0 {
			line += "\x00report-status side-band-64k quiet ofs-delta agent=wiggum"
			if atomic {
				line += " atomic"
			}
		}
		writePkt(&req, line+"\n")
		pack = pack || u.src != ""
	}
	req.WriteString("0000")
	if pack {
		data, err := r.packFor(ctx, cmds)
		if err != nil {
			return nil, err
		}
		req.Write(data)
	}
	if _, err := conn.Write(req.Bytes()); err != nil {
		return nil, r.netErr(ctx, op, err)
	}

	report, said, err := readReport(br)
	if err != nil {
		return nil, r.netErr(ctx, op, err)
	}
	if st, ok := strings.CutPrefix(report.unpack, "unpack "); !ok || st != "ok" {
		return nil, &ServerRejectedError{Op: op, Remote: r.Name, Ref: cmds[0].dst, Reason: "unpack failed: " + st, Message: said}
	}
	serverSide, reason, ref := false, "", ""
	for _, u := range cmds {
		why, refused := report.ng[u.dst]
		if !refused {
			if _, ok := report.ok[u.dst]; !ok {
				return nil, &NetworkError{Op: op, Remote: r.Name, Detail: "the server's report does not name " + u.dst}
			}
			continue
		}
		serverSide = true
		if reason == "" && !strings.Contains(why, "atomic") {
			reason, ref = why, u.dst
		}
	}
	if !serverSide {
		return bad, nil
	}
	// Refused at update time: a lease broken between the advertisement
	// and the update, or the server's own rules. Its refs say which.
	var check []update
	for _, u := range cmds {
		if _, refused := report.ng[u.dst]; refused {
			check = append(check, u)
		}
	}
	now, err := r.lsRemote(ctx, op, check)
	if err != nil {
		return nil, err
	}
	for _, u := range check {
		if now[u.dst] != u.expect {
			bad[u.dst] = now[u.dst]
		}
	}
	if len(bad) > 0 {
		return bad, nil
	}
	if reason == "" {
		reason, ref = "atomic transaction failed", cmds[0].dst
	}
	return nil, &ServerRejectedError{Op: op, Remote: r.Name, Ref: ref, Reason: reason, Message: said}
}

func orZero(id string) string {
	if id == "" {
		return zeroID
	}
	return id
}

// netErr is a failed connection as a NetworkError (a timeout when ctx ran
// out).
func (r *Remote) netErr(ctx context.Context, op string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	var ne net.Error
	if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return &NetworkError{Op: op, Remote: r.Name, Timeout: true}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the server closed the connection")
	}
	return &NetworkError{Op: op, Remote: r.Name, Detail: err.Error()}
}

// packFor packs what the new values of cmds need that the expected
// values (which the server has) do not reach.
func (r *Remote) packFor(ctx context.Context, cmds []update) ([]byte, error) {
	var in bytes.Buffer
	for _, u := range cmds {
		if u.src != "" {
			in.WriteString(u.src + "\n")
		}
	}
	for _, u := range cmds {
		// The old values of the refs it moves (not of those it deletes,
		// which need no objects): this clone has them, from its views or
		// its own pushes.
		if u.src != "" && u.expect != "" {
			in.WriteString("^" + u.expect + "\n")
		}
	}
	cmd := exec.CommandContext(ctx, git.Binary(), "pack-objects", "--all-progress-implied", "--revs", "--stdout", "--thin", "--delta-base-offset", "-q")
	cmd.Dir = r.Repo.Root
	cmd.Env = git.CleanEnv()
	cmd.SysProcAttr = diesWithUs(false)
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("remote: pack the objects to push: %w: %s", err, firstLines(stderr.String(), 3))
	}
	return out.Bytes(), nil
}

func writePkt(b *bytes.Buffer, s string) {
	fmt.Fprintf(b, "%04x%s", len(s)+4, s)
}

// readPkt reads one pkt-line; flush is true for "0000".
func readPkt(br *bufio.Reader) (data []byte, flush bool, err error) {
	var head [4]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, false, err
	}
	n, err := strconv.ParseUint(string(head[:]), 16, 16)
	if err != nil {
		return nil, false, fmt.Errorf("bad pkt-line length %q", head[:])
	}
	if n == 0 {
		return nil, true, nil
	}
	if n < 4 {
		return nil, false, fmt.Errorf("bad pkt-line length %d", n)
	}
	data = make([]byte, n-4)
	if _, err := io.ReadFull(br, data); err != nil {
		return nil, false, err
	}
	return data, false, nil
}

// readAdvertisement reads receive-pack's refs and capabilities.
func readAdvertisement(br *bufio.Reader) (map[string]string, map[string]string, error) {
	refs, caps := map[string]string{}, map[string]string{}
	first := true
	for {
		data, flush, err := readPkt(br)
		if err != nil {
			return nil, nil, err
		}
		if flush {
			if first {
				return nil, nil, errors.New("the server advertised nothing (is receive-pack enabled?)")
			}
			return refs, caps, nil
		}
		line := strings.TrimSuffix(string(data), "\n")
		if first {
			if strings.HasPrefix(line, "ERR ") {
				return nil, nil, errors.New(strings.TrimPrefix(line, "ERR "))
			}
			var cs string
			line, cs, _ = strings.Cut(line, "\x00")
			for _, c := range strings.Fields(cs) {
				k, v, _ := strings.Cut(c, "=")
				caps[k] = v
			}
			first = false
		}
		id, name, ok := strings.Cut(line, " ")
		if !ok || len(id) != 40 {
			return nil, nil, fmt.Errorf("bad advertisement line %q", line)
		}
		if name == "capabilities^{}" || name == ".have" || strings.HasPrefix(id, "shallow") {
			continue
		}
		refs[name] = id
	}
}

// report is receive-pack's report-status.
type report struct {
	unpack string
	ok     map[string]bool
	ng     map[string]string
}

// readReport reads the report through side-band-64k: band 1 carries its
// pkt-lines, band 2 what the server says (hooks), band 3 a fatal error.
func readReport(br *bufio.Reader) (*report, string, error) {
	rep := &report{ok: map[string]bool{}, ng: map[string]string{}}
	var said strings.Builder
	var inner bytes.Buffer
	for {
		data, flush, err := readPkt(br)
		if err != nil {
			return nil, said.String(), err
		}
		if flush {
			break
		}
		if len(data) == 0 {
			continue
		}
		switch data[0] {
		case 1:
			inner.Write(data[1:])
		case 2:
			said.Write(data[1:])
		case 3:
			return nil, said.String(), fmt.Errorf("the server failed: %s", strings.TrimSpace(string(data[1:])))
		}
		if reportDone(inner.Bytes()) {
			break
		}
	}
	ib := bufio.NewReader(&inner)
	for {
		data, flush, err := readPkt(ib)
		if err != nil {
			return nil, said.String(), fmt.Errorf("a short report from the server: %w", err)
		}
		if flush {
			break
		}
		line := strings.TrimSuffix(string(data), "\n")
		switch {
		case strings.HasPrefix(line, "unpack "):
			rep.unpack = line
		case strings.HasPrefix(line, "ok "):
			rep.ok[strings.TrimPrefix(line, "ok ")] = true
		case strings.HasPrefix(line, "ng "):
			ref, why, _ := strings.Cut(strings.TrimPrefix(line, "ng "), " ")
			rep.ng[ref] = why
		}
	}
	return rep, strings.TrimSpace(said.String()), nil
}

// reportDone reports whether b holds a whole report (pkt-lines up to a
// flush): what comes after it on the connection is not waited for.
func reportDone(b []byte) bool {
	for len(b) >= 4 {
		n, err := strconv.ParseUint(string(b[:4]), 16, 16)
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		if n < 4 || int(n) > len(b) {
			return false
		}
		b = b[n:]
	}
	return false
}
