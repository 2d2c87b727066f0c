package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// heldRE is the refusal of a caller that finds the lock taken: it must name
// the holder's pid and the time it took the lock.
var heldRE = regexp.MustCompile(`held by pid (\d+) on \S+ since (\S+)`)

// TestLockExactlyOneOfEight starts eight `wiggum lock` at once, many times
// over: exactly one runs its command, and the seven others exit 3 naming the
// winner's pid and start time. The winner holds until all seven have given
// up, so the result does not depend on how the processes were scheduled.
func TestLockExactlyOneOfEight(t *testing.T) {
	const procs, rounds = 8, 20
	dir := newRepo(t)
	for round := range rounds {
		ranLog := filepath.Join(dir, "ran-"+strconv.Itoa(round))
		release := filepath.Join(dir, "release-"+strconv.Itoa(round))
		script := `echo $$ >> "$1"; while [ ! -e "$2" ]; do sleep 0.02; done`
		var ps []*bg
		for range procs {
			ps = append(ps, startWiggum(t, dir, nil, "lock", "--", "sh", "-c", script, "sh", ranLog, release))
		}
		var losers []*bg
		eventually(t, "seven of eight to give up", func() bool {
			losers = losers[:0]
			for _, p := range ps {
				if p.exited() {
					losers = append(losers, p)
				}
			}
			return len(losers) >= procs-1
		})
		var winner *bg
		for _, p := range ps {
			if !p.exited() {
				winner = p
			}
		}
		if winner == nil || len(losers) != procs-1 {
			for _, p := range ps {
				t.Logf("pid %d exited=%v stderr=%q", p.pid(), p.exited(), p.stderr())
			}
			t.Fatalf("round %d: %d of %d exited while the holder still held the lock", round, len(losers), procs)
		}
		for _, p := range losers {
			if code := p.wait(t); code != 3 {
				t.Fatalf("round %d: a loser exited %d, want 3; stderr: %s", round, code, p.stderr())
			}
			m := heldRE.FindStringSubmatch(p.stderr())
			if m == nil {
				t.Fatalf("round %d: refusal does not name the holder's pid and start time: %q", round, p.stderr())
			}
			if m[1] != strconv.Itoa(winner.pid()) {
				t.Fatalf("round %d: refusal names pid %s, the holder is %d: %q", round, m[1], winner.pid(), p.stderr())
			}
		}
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := winner.wait(t); code != 0 {
			t.Fatalf("round %d: the holder exited %d; stderr: %s", round, code, winner.stderr())
		}
		data, err := os.ReadFile(ranLog)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Fields(string(data))); n != 1 {
			t.Fatalf("round %d: %d commands ran under the lock, want exactly 1", round, n)
		}
	}
}
