package remote

import (
	"context"
	"errors"
	"strings"
)

// update is one ref change of a push: src "" deletes dst; expect is dst's
// exact value on the server that the change requires ("" = must not exist).
type update struct {
	src, dst, expect string
}

// unknown stands for "not what was expected" when the server's value was
// not read.
const unknown = "?"

// push sends ups in one push (atomic when there are several), each with a
// lease on its exact expected value. It returns the refs whose expectation
// did not hold, mapped to their value on the server ("" absent, unknown
// when not read); an empty map means every update was made. A refusal for
// any other reason is a *ServerRejectedError.
func (r *Remote) push(ctx context.Context, op string, ups []update) (map[string]string, error) {
	return r.pushRefs(ctx, op, ups, true)
}

// pushRefs is push, atomic or not: a push that is not makes each update
// whose expectation holds, whatever happens to the others.
func (r *Remote) pushRefs(ctx context.Context, op string, ups []update, atomic bool) (map[string]string, error) {
	if r.daemon != nil && !r.noSendPack.Load() {
		bad, err := r.sendPack(ctx, op, ups, atomic)
		if !errors.Is(err, errNoSendPack) {
			r.stats.mu.Lock()
			r.stats.Pushes++
			r.stats.mu.Unlock()
			return bad, err
		}
		// An older server: git pushes from now on.
		r.noSendPack.Store(true)
	}
	args := []string{"push", "--porcelain", "--no-verify"}
	if atomic && len(ups) > 1 {
		args = append(args, "--atomic")
	}
	for _, u := range ups {
		args = append(args, "--force-with-lease="+u.dst+":"+u.expect)
	}
	args = append(args, remoteArg)
	for _, u := range ups {
		args = append(args, u.src+":"+u.dst)
	}
	r.stats.mu.Lock()
	r.stats.Pushes++
	r.stats.mu.Unlock()
	out, stderr, err := r.net(ctx, op, receivePack, nil, args...)
	if err == nil {
		return map[string]string{}, nil
	}
	var ne *NetworkError
	if errors.As(err, &ne) || ctx.Err() != nil {
		return nil, err
	}
	lines := porcelain(out)
	if len(lines) == 0 {
		return nil, r.transportError(op, err)
	}
	bad := map[string]string{}
	serverSide := false
	reason, ref := "", ""
	// The updates to read back from the server when it refused at update
	// time: all of an atomic push (none was made), only the refused ones
	// of one that is not (the others were made).
	var check []update
	for _, u := range ups {
		l, ok := lines[u.dst]
		if !ok || l.flag != '!' {
			if atomic {
				check = append(check, u)
			}
			continue
		}
		check = append(check, u)
		switch {
		case strings.Contains(l.summary, "stale info"), strings.Contains(l.summary, "non-fast-forward"),
			strings.Contains(l.summary, "fetch first"), strings.Contains(l.summary, "already exists"):
			bad[u.dst] = unknown
		case strings.Contains(l.summary, "atomic push failed"), strings.Contains(l.summary, "atomic transaction failed"):
			serverSide = serverSide || strings.Contains(l.summary, "remote rejected")
		default:
			serverSide = true
			if reason == "" {
				reason, ref = l.summary, u.dst
			}
		}
	}
	if len(bad) > 0 && !serverSide {
		return bad, nil
	}
	if serverSide {
		// The server refused at update time: a lease broken between its
		// advertisement and the update, or its own rules. Its refs say
		// which. (In a push that is not atomic, a ref refused on the
		// client's side must not hide one the server refused.)
		now, lerr := r.lsRemote(ctx, op, check)
		if lerr != nil {
			return nil, lerr
		}
		for _, u := range check {
			if _, known := bad[u.dst]; !known && now[u.dst] != u.expect {
				bad[u.dst] = now[u.dst]
			}
		}
		if len(bad) > 0 {
			return bad, nil
		}
		if reason == "" {
			reason = "atomic transaction failed"
			ref = ups[0].dst
		}
		return nil, &ServerRejectedError{Op: op, Remote: r.Name, Ref: ref, Reason: strings.TrimSpace(reason), Message: remoteLines(stderr)}
	}
	return nil, r.transportError(op, err)
}

// lsRemote reads the server's values of ups' refs ("" when absent).
func (r *Remote) lsRemote(ctx context.Context, op string, ups []update) (map[string]string, error) {
	args := []string{"ls-remote", remoteArg}
	for _, u := range ups {
		args = append(args, u.dst)
	}
	var out string
	err := retryRead(ctx, func() error {
		var err error
		out, _, err = r.net(ctx, op+" (reading the server's refs)", "", nil, args...)
		var ne *NetworkError
		if err != nil && !errors.As(err, &ne) {
			err = r.transportError(op, err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	now := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		sha, name, ok := strings.Cut(line, "\t")
		if ok {
			now[name] = sha
		}
	}
	return now, nil
}

type pushLine struct {
	flag    byte
	summary string
}

// porcelain reads `git push --porcelain` status lines by destination ref.
func porcelain(out string) map[string]pushLine {
	res := map[string]pushLine{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || len(f[0]) != 1 {
			continue
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			continue
		}
		res[f[1][i+1:]] = pushLine{flag: f[0][0], summary: f[2]}
	}
	return res
}

// remoteLines keeps what the server said ("remote: ..." lines).
func remoteLines(stderr string) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "remote:"); ok && strings.TrimSpace(rest) != "" {
			keep = append(keep, strings.TrimSpace(rest))
		}
	}
	return strings.Join(keep, "\n")
}
