package conformance

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/conformance/fakemodel"
)

// Two machines share a plan through the git server (wiggum run --remote),
// each with the real client: every story lands on the server exactly once,
// by one of them, with its work; no claim is left; and neither agent's own
// push reaches the server while wiggum's claims and landings do.
func TestTwoMachinesShareAPlan(t *testing.T) {
	forEachClient(t, func(t *testing.T, c client) {
		var script []fakemodel.Turn
		for range 2 {
			script = append(script,
				// The pause lets the other machine claim the other story.
				fakemodel.Turn{Shell: `sleep 2; echo "$WIGGUM_STORY" > "$WIGGUM_STORY.txt"`},
				fakemodel.Turn{Shell: `git push origin "HEAD:refs/heads/agent-$WIGGUM_STORY"`},
				fakemodel.Turn{Text: "done"})
		}
		a := newWorld(t, c, script...)
		writeFile(t, filepath.Join(a.dir, "plan.md"), "- [ ] US-1: first\n- [ ] US-2: second\n")
		a.git("commit", "-q", "-am", "a plan of two stories")
		a.git("push", "-q", "origin", "main")
		b := a.clone(script...)

		args := []string{"--remote", "origin", "--retries", "1"}
		runA, runB := a.start(a.runArgs(args...)...), b.start(b.runArgs(args...)...)
		for _, r := range []struct {
			w   *world
			err error
		}{{a, runA.Wait()}, {b, runB.Wait()}} {
			if r.err != nil {
				t.Fatalf("a machine's run failed: %v", r.err)
			}
		}

		log := a.cmd(a.remote, "git", "log", "--format=%s", "main")
		for _, id := range []string{"US-1", "US-2"} {
			if n := strings.Count(log, "Merge "+id+":"); n != 1 {
				t.Fatalf("%s landed %d times on the server:\n%s", id, n, log)
			}
			if got := a.cmd(a.remote, "git", "show", "main:"+id+".txt"); got != id+"\n" {
				t.Fatalf("%s's work on the server: %q", id, got)
			}
		}
		if plan := a.cmd(a.remote, "git", "show", "main:plan.md"); strings.Count(plan, "- [x]") != 2 {
			t.Fatalf("the server's plan is not done:\n%s", plan)
		}
		if refs := a.remoteRefs(); strings.Contains(refs, "refs/heads/agent-") || strings.Contains(refs, "refs/wiggum/claims/") {
			t.Fatalf("an agent's push or a claim is left on the server:\n%s", refs)
		}
		// Which machine does which story is the race's to decide; both
		// usually get one.
		t.Logf("%s: turns played: %d on one machine, %d on the other", c.name, a.srv.Played(), b.srv.Played())
	})
}
