package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/gitserver"
)

// fleetAgent is the scripted agent of the shared-run proofs. Every run
// appends "story machine" to $FLEET_LOG (the record of claim winners: an
// agent runs only for a story its machine claimed). AGENT_MODE=hang
// commits partial work, signals, and hangs (to be SIGKILLed); pause
// commits its work, signals, and sleeps a while (to be SIGSTOPped);
// pushfirst commits a first part and works on long enough for a renewal
// to push it; wait signals and finishes when $SIGNAL_DIR/go appears.
const fleetAgent = `set -e
echo "$WIGGUM_STORY $MACHINE" >> "$FLEET_LOG"
echo "$WIGGUM_STORY by $MACHINE" > "f-$WIGGUM_STORY.txt"
case "$AGENT_MODE" in
hang|pause)
  echo "$MACHINE" > "partial-$WIGGUM_STORY.txt"
  git add "partial-$WIGGUM_STORY.txt"
  git commit -q -m "partial $WIGGUM_STORY by $MACHINE"
  : > "$SIGNAL_DIR/started-$WIGGUM_STORY"
  if [ "$AGENT_MODE" = hang ]; then sleep 300; else sleep 3; fi
  ;;
pushfirst)
  git commit -q --allow-empty -m "first part of $WIGGUM_STORY by $MACHINE"
  sleep 4
  ;;
wait)
  : > "$SIGNAL_DIR/started-$WIGGUM_STORY"
  while [ ! -e "$SIGNAL_DIR/go" ]; do sleep 0.05; done
  ;;
esac
`

type fleet struct {
	t      *testing.T
	srv    *gitserver.Server
	bare   string
	dir    string
	agent  string
	log    string
	signal string
}

func newFleet(t *testing.T, transport string, stories int) *fleet {
	t.Helper()
	gitserver.Require(t)
	dir := t.TempDir()
	srvRoot := filepath.Join(dir, "srv")
	if err := os.MkdirAll(srvRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fleet{t: t, dir: dir, bare: gitserver.NewBare(t, srvRoot, "r.git"), agent: filepath.Join(dir, "agent.sh"),
		log: filepath.Join(dir, "winners.log"), signal: filepath.Join(dir, "signals")}
	f.srv = gitserver.Start(t, transport, srvRoot)
	var plan strings.Builder
	plan.WriteString("# plan\n\n")
	for i := 1; i <= stories; i++ {
		fmt.Fprintf(&plan, "- [ ] US-%d: story %d\n", i, i)
	}
	gitserver.Seed(t, filepath.Join(dir, "seed"), f.srv.URL("r.git"), map[string]string{"plan.md": plan.String()})
	if err := os.WriteFile(f.agent, []byte(fleetAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.signal, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// machine clones the server and starts wiggum run --remote in the clone.
func (f *fleet) machine(name string, env []string, args ...string) *bg {
	f.t.Helper()
	clone := filepath.Join(f.dir, name)
	if _, err := os.Stat(clone); err != nil {
		gitserver.Clone(f.t, f.srv.URL("r.git"), clone)
	}
	env = append([]string{"MACHINE=" + name, "FLEET_LOG=" + f.log, "SIGNAL_DIR=" + f.signal}, env...)
	all := append([]string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + f.agent, "--remote", "origin", "-q"}, args...)
	return startWiggum(f.t, clone, env, all...)
}

func (f *fleet) git(args ...string) string {
	f.t.Helper()
	return strings.TrimSpace(mustRun(f.t, f.bare, "git", args...))
}

// landings counts the landing commits on the server's main per story
// (Wiggum-Story trailers of its first-parent history).
func (f *fleet) landings() map[string]int {
	out := f.git("log", "--first-parent", "--format=%(trailers:key=Wiggum-Story,valueonly,separator=%x20)", "main")
	n := map[string]int{}
	for _, s := range strings.Fields(out) {
		n[s]++
	}
	return n
}

// winners reads the agent runs per story and the machines that ran them.
func (f *fleet) winners() map[string][]string {
	data, _ := os.ReadFile(f.log)
	w := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if story, machine, ok := strings.Cut(line, " "); ok {
			w[story] = append(w[story], machine)
		}
	}
	return w
}

// startedStory waits for an agent in hang or pause mode to signal, and
// returns its story.
func startedStory(t *testing.T, dir string) string {
	t.Helper()
	var story string
	eventually(t, "an agent to start", func() bool {
		found, _ := filepath.Glob(filepath.Join(dir, "started-*"))
		if len(found) == 0 {
			return false
		}
		story = strings.TrimPrefix(filepath.Base(found[0]), "started-")
		return true
	})
	return story
}

func waitLong(t *testing.T, b *bg, within time.Duration) int {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(within):
		t.Fatalf("pid %d did not exit within %s\nstdout: %s\nstderr: %s", b.pid(), within, b.stdout(), b.stderr())
	}
	if b.exitStatus.Signaled() {
		return 128 + int(b.exitStatus.Signal())
	}
	return b.exitStatus.ExitStatus()
}

// 4 machines x 2 workers x 24 stories through git daemon: every story lands
// exactly once, no story is claimed (run) twice, no merge is lost, and
// nothing is left on the server.
func TestFleetLandsEveryStoryOnce(t *testing.T) {
	const stories = 24
	f := newFleet(t, "daemon", stories)
	var ms []*bg
	for i := 1; i <= 4; i++ {
		ms = append(ms, f.machine(fmt.Sprintf("m%d", i), nil, "--workers", "2"))
	}
	for i, m := range ms {
		if code := waitLong(t, m, 4*time.Minute); code != 0 {
			t.Fatalf("machine m%d exited %d\nstdout: %s\nstderr: %s", i+1, code, m.stdout(), m.stderr())
		}
	}
	landed := f.landings()
	winners := f.winners()
	for i := 1; i <= stories; i++ {
		id := fmt.Sprintf("US-%d", i)
		if landed[id] != 1 {
			t.Errorf("%s landed %d times", id, landed[id])
		}
		if len(winners[id]) != 1 {
			t.Errorf("%s was worked on by %v: a duplicate claim", id, winners[id])
		}
		if got := f.git("show", "main:f-"+id+".txt"); !strings.HasPrefix(got, id+" by m") {
			t.Errorf("%s's work is not on main: %q", id, got)
		}
	}
	if len(landed) != stories {
		t.Errorf("landings for %d stories, want %d: %v", len(landed), stories, landed)
	}
	if n := f.git("rev-list", "--count", "--merges", "main"); n != fmt.Sprint(stories) {
		t.Errorf("%s merge commits on main, want %d", n, stories)
	}
	plan := f.git("show", "main:plan.md")
	if strings.Count(plan, "- [x] US-") != stories || strings.Contains(plan, "- [ ] ") {
		t.Errorf("plan on main:\n%s", plan)
	}
	if refs := f.git("for-each-ref", "refs/wiggum", "refs/heads/wiggum"); refs != "" {
		t.Errorf("left on the server:\n%s", refs)
	}
	// The machines shared the work: more than one landed something.
	by := map[string]bool{}
	for _, ms := range winners {
		by[ms[0]] = true
	}
	if len(by) < 2 {
		t.Errorf("one machine did everything: %v", by)
	}
}

// A machine SIGKILLed mid-story: its claim goes stale after the lease,
// another machine takes it over, goes on from the commits the dead one had
// pushed, and lands the story once; those commits stay reachable.
func TestKilledMachineIsTakenOver(t *testing.T) {
	for _, tr := range gitserver.Transports {
		t.Run(tr, func(t *testing.T) {
			f := newFleet(t, tr, 2)
			a := f.machine("a", []string{"AGENT_MODE=hang"}, "--lease", "2s")
			story := startedStory(t, f.signal)
			// Its renewals publish the partial commit.
			eventually(t, "a's partial commit on the server", func() bool {
				out, err := exec.Command("git", "-C", f.bare, "log", "--format=%s", "wiggum/"+story).Output()
				return err == nil && strings.Contains(string(out), "partial "+story+" by a")
			})
			partial := f.git("rev-parse", "wiggum/"+story)
			if err := syscall.Kill(a.pid(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			a.wait(t)
			b := f.machine("b", nil, "--lease", "2s")
			if code := waitLong(t, b, 2*time.Minute); code != 0 {
				t.Fatalf("b exited %d\nstdout: %s\nstderr: %s", code, b.stdout(), b.stderr())
			}
			if !strings.Contains(b.stdout(), story+" landed") {
				t.Fatalf("b did not land %s:\n%s", story, b.stdout())
			}
			events, _ := os.ReadFile(filepath.Join(f.dir, "b", ".ralph", "wiggum", "events.jsonl"))
			if !regexp.MustCompile(`"event":"claimed".*"took_over":"[^"]+"`).Match(events) && !regexp.MustCompile(`"took_over":"[^"]+".*"event":"claimed"`).Match(events) {
				t.Fatalf("b's claim of US-1 was not a takeover:\n%s", events)
			}
			landed := f.landings()
			if landed["US-1"] != 1 || landed["US-2"] != 1 {
				t.Fatalf("landings %v, want each story once", landed)
			}
			if out := f.git("merge-base", "--is-ancestor", partial, "main"); out != "" {
				t.Fatal(out)
			}
			if got := f.git("show", "main:partial-"+story+".txt"); got != "a" {
				t.Fatalf("the dead machine's pushed work is not on main: %q", got)
			}
			if refs := f.git("for-each-ref", "refs/wiggum"); refs != "" {
				t.Fatalf("left on the server:\n%s", refs)
			}
		})
	}
}

// A machine paused (SIGSTOP) past its lease: another takes the story over
// and lands it; the paused one, continued, cannot land its stale work (its
// claim is gone) and keeps it on its local branch.
func TestPausedMachineCannotLandStaleWork(t *testing.T) {
	f := newFleet(t, "daemon", 1)
	a := f.machine("a", []string{"AGENT_MODE=pause"}, "--lease", "2s")
	startedStory(t, f.signal)
	if err := syscall.Kill(a.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	b := f.machine("b", nil, "--lease", "2s")
	code := waitLong(t, b, 2*time.Minute)
	if err := syscall.Kill(a.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(b.stdout(), "US-1 landed") {
		t.Fatalf("b exited %d without landing US-1\nstdout: %s\nstderr: %s", code, b.stdout(), b.stderr())
	}
	codeA := waitLong(t, a, 2*time.Minute)
	if codeA != 0 {
		t.Fatalf("a exited %d\nstdout: %s\nstderr: %s", codeA, a.stdout(), a.stderr())
	}
	if !strings.Contains(a.stdout(), "took its claim over") && !strings.Contains(a.stdout(), "claim US-1 lost") {
		t.Fatalf("a did not report losing its claim:\n%s", a.stdout())
	}
	if landed := f.landings(); landed["US-1"] != 1 {
		t.Fatalf("US-1 landed %d times", landed["US-1"])
	}
	// What landed is b's attempt (on top of whatever a had pushed before
	// the pause), never a's late one.
	if got := f.git("show", "main:f-US-1.txt"); got != "US-1 by b" {
		t.Fatalf("main has a's stale work: f-US-1.txt = %q", got)
	}
	// a's work is on its local branch.
	out := mustRun(t, filepath.Join(f.dir, "a"), "git", "log", "--format=%s", "--branches=wiggum/*")
	if !strings.Contains(out, "partial US-1 by a") {
		t.Fatalf("a's work is not on a local branch:\n%s", out)
	}
	w := f.winners()["US-1"]
	sort.Strings(w)
	if strings.Join(w, ",") != "a,b" {
		t.Fatalf("US-1 was run by %v, want a then b", w)
	}
}

// A machine restarted after a SIGKILL goes on with the story its dead
// process held at once - the claim is its own and its pid is gone - rather
// than waiting out the lease (an hour here).
func TestRestartedMachineTakesItsOwnStoryAtOnce(t *testing.T) {
	f := newFleet(t, "daemon", 1)
	a := f.machine("a", []string{"AGENT_MODE=hang"}, "--lease", "1h")
	story := startedStory(t, f.signal)
	if err := syscall.Kill(a.pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.wait(t)
	a2 := f.machine("a", nil, "--lease", "1h")
	if code := waitLong(t, a2, 2*time.Minute); code != 0 {
		t.Fatalf("the restarted machine exited %d\nstdout: %s\nstderr: %s", code, a2.stdout(), a2.stderr())
	}
	events, _ := os.ReadFile(filepath.Join(f.dir, "a", ".ralph", "wiggum", "events.jsonl"))
	if !strings.Contains(string(events), `"took_over_why":"its process is gone"`) {
		t.Fatalf("the restart did not take its own dead claim over:\n%s", events)
	}
	if landed := f.landings(); landed[story] != 1 {
		t.Fatalf("%s landed %d times", story, landed[story])
	}
	if refs := f.git("for-each-ref", "refs/wiggum"); refs != "" {
		t.Fatalf("left on the server:\n%s", refs)
	}
}

// raceTwice is a pre-receive hook that moves main under the first two
// pushes that update it, as two other machines landing just before would:
// the landing's first attempt (built on the tip this clone last saw) and
// its second (built on a fresh fetch) both lose, so the second marks the
// story ready - its finished work on its branch, its claim saying so.
const raceTwice = `n=$(cat "$GIT_DIR/races" 2>/dev/null || echo 0)
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && [ "$n" -lt 2 ]; then
    n=$((n + 1))
    echo $n > "$GIT_DIR/races"
    unset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
    c=$(git -c user.name=other -c user.email=other@example.com commit-tree -p refs/heads/main -m "another machine landed" "refs/heads/main^{tree}") || exit 1
    git update-ref refs/heads/main "$c" || exit 1
  fi
done
exit 0
`

// A machine SIGKILLed after its story was finished and its work pushed
// (the landing lost its races and marked the claim ready), before the
// story landed: the story is landed once, from the work the dead machine
// pushed, and no agent runs on it again - not on another machine once the
// lease ran out, not on the same machine restarted (its process is gone).
func TestFinishedStoryOfKilledMachineLandsOnce(t *testing.T) {
	for _, tc := range []struct{ name, next, lease string }{
		{"taken over by another machine", "b", "2s"},
		{"same machine restarted", "a", "1h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, "daemon", 1)
			gitserver.Hook(t, f.bare, "pre-receive", raceTwice)
			a := f.machine("a", []string{"WIGGUM_TEST_KILLPOINT=remote-marked-ready"}, "--lease", tc.lease)
			if code := waitLong(t, a, 2*time.Minute); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("a exited %d, want killed at the killpoint\nstdout: %s\nstderr: %s", code, a.stdout(), a.stderr())
			}
			// What the kill left on the server: the finished work on the
			// story's branch, the claim saying it is ready, main without it.
			finished := f.git("rev-parse", "wiggum/US-1")
			if got := f.git("show", finished+":f-US-1.txt"); got != "US-1 by a" {
				t.Fatalf("a's finished work is not on its branch: %q", got)
			}
			if claim := f.git("log", "-1", "--format=%B", "refs/wiggum/claims/US-1"); !strings.Contains(claim, `"ready":"`+finished+`"`) {
				t.Fatalf("a's claim does not say US-1 is ready at %s:\n%s", finished, claim)
			}
			if n := f.landings()["US-1"]; n != 0 {
				t.Fatalf("US-1 landed %d times before the kill", n)
			}
			gitserver.RemoveHook(t, f.bare, "pre-receive")

			next := f.machine(tc.next, nil, "--lease", tc.lease)
			if code := waitLong(t, next, 2*time.Minute); code != 0 {
				t.Fatalf("%s exited %d\nstdout: %s\nstderr: %s", tc.next, code, next.stdout(), next.stderr())
			}
			if w := f.winners()["US-1"]; strings.Join(w, ",") != "a" {
				t.Fatalf("US-1's agent ran on %v, want once, on a", w)
			}
			if n := f.landings()["US-1"]; n != 1 {
				t.Fatalf("US-1 landed %d times, want once", n)
			}
			if out := f.git("merge-base", "--is-ancestor", finished, "main"); out != "" {
				t.Fatal(out)
			}
			if got := f.git("show", "main:f-US-1.txt"); got != "US-1 by a" {
				t.Fatalf("main does not have a's finished work: %q", got)
			}
			if plan := f.git("show", "main:plan.md"); !strings.Contains(plan, "- [x] US-1") {
				t.Fatalf("US-1 is not ticked on main:\n%s", plan)
			}
			// The landing names a's machine for the work, and the machine
			// that landed it when that is another one.
			body := f.git("log", "-1", "--format=%B", "main")
			if !strings.Contains(body, "Wiggum-Story: US-1") || strings.Contains(body, "Wiggum-Landed-By: ") != (tc.next != "a") {
				t.Fatalf("the landing does not say whose work it is and who landed it:\n%s", body)
			}
			// Another machine lands it from the server (the claim says
			// ready); the same machine restarted, from the worktree it
			// kept for landing.
			said := next.stderr()
			if tc.next == "a" {
				said = next.stdout()
			}
			if !strings.Contains(said, "no agent ran on it again") && !strings.Contains(said, "not redoing it") {
				t.Fatalf("%s did not say it landed the finished work:\nstdout: %s\nstderr: %s", tc.next, next.stdout(), next.stderr())
			}
			if refs := f.git("for-each-ref", "refs/wiggum", "refs/heads/wiggum"); refs != "" {
				t.Fatalf("left on the server:\n%s", refs)
			}
		})
	}
}

// A machine SIGKILLed after its agent finished a story, before the story
// landed or its claim said it was ready, and restarted in the same clone:
// the finished work in its local worktree is landed - not redone, not
// saved aside and replaced by a new agent run from the last pushed commit
// - whether the kill came before the story's branch was ever pushed (its
// attempt recorded done) or after a renewal had pushed its first commits
// (its work committed, its end unrecorded).
func TestRestartedMachineLandsItsFinishedWork(t *testing.T) {
	for _, tc := range []struct{ name, point, mode, lease string }{
		{"never pushed", "attempt-done", "", "1h"},
		{"pushed before it finished", "attempt-committed", "pushfirst", "3s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, "daemon", 2)
			a := f.machine("a", []string{"WIGGUM_TEST_KILLPOINT=" + tc.point, "AGENT_MODE=" + tc.mode}, "--lease", tc.lease)
			if code := waitLong(t, a, 2*time.Minute); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("a exited %d, want killed at the killpoint\nstdout: %s\nstderr: %s", code, a.stdout(), a.stderr())
			}
			w := f.winners()
			var story string
			for s := range w {
				story = s
			}
			if len(w) != 1 {
				t.Fatalf("agents ran for %v before the kill, want one story", w)
			}
			branch := strings.TrimSpace(mustRun(t, f.bare, "sh", "-c", "git rev-parse -q --verify refs/heads/wiggum/"+story+" || true"))
			if pushed := branch != ""; pushed != (tc.mode == "pushfirst") {
				t.Fatalf("the story's branch on the server: %q before the restart (want pushed: %v)", branch, tc.mode == "pushfirst")
			}
			if n := f.landings()[story]; n != 0 {
				t.Fatalf("%s landed %d times before the kill", story, n)
			}
			a2 := f.machine("a", nil, "--lease", tc.lease)
			if code := waitLong(t, a2, 2*time.Minute); code != 0 {
				t.Fatalf("the restarted machine exited %d\nstdout: %s\nstderr: %s", code, a2.stdout(), a2.stderr())
			}
			if runs := f.winners()[story]; len(runs) != 1 {
				t.Fatalf("%s's agent ran %d times (%v), want once: the restart redid finished work\nstdout: %s", story, len(runs), runs, a2.stdout())
			}
			landed := f.landings()
			if landed["US-1"] != 1 || landed["US-2"] != 1 {
				t.Fatalf("landings per story: %v, want each once", landed)
			}
			if got := f.git("show", "main:f-"+story+".txt"); got != story+" by a" {
				t.Fatalf("main does not have the finished work of %s: %q", story, got)
			}
			if refs := f.git("for-each-ref", "refs/wiggum", "refs/heads/wiggum"); refs != "" {
				t.Fatalf("left on the server:\n%s", refs)
			}
			if out, _ := exec.Command("git", "-C", filepath.Join(f.dir, "a"), "for-each-ref", "refs/heads/wiggum-backup", "refs/wiggum/backup").CombinedOutput(); len(out) > 0 {
				t.Fatalf("the finished work was saved aside rather than landed:\n%s", out)
			}
		})
	}
}

// git advertises a server's refs one at a time, so a machine's claim push
// can read another machine's landing half applied: the story's claim
// already deleted, the target not yet moved (a pre-receive hook stands in
// for that landing here, moving the target after the advertisement). The
// claim is made, but no agent runs on the landed story: the machine reads
// the target again, finds the story done and gives it back, and its run
// ends with nothing left to do.
func TestTornClaimRunsNoAgent(t *testing.T) {
	f := newFleet(t, "daemon", 1)
	before := f.git("rev-parse", "main")
	a := f.machine("a", nil)
	if code := waitLong(t, a, time.Minute); code != 0 {
		t.Fatalf("machine a exited %d\nstdout: %s\nstderr: %s", code, a.stdout(), a.stderr())
	}
	landed := f.git("rev-parse", "main")
	f.git("update-ref", "refs/heads/main", before)
	gitserver.Hook(t, f.bare, "pre-receive", "unset GIT_QUARANTINE_PATH\ngit update-ref refs/heads/main "+landed+"\ncat >/dev/null\n")
	b := f.machine("b", nil)
	code := waitLong(t, b, time.Minute)
	gitserver.RemoveHook(t, f.bare, "pre-receive")
	if code != 0 {
		t.Fatalf("machine b exited %d\nstdout: %s\nstderr: %s", code, b.stdout(), b.stderr())
	}
	if w := f.winners(); len(w["US-1"]) != 1 || w["US-1"][0] != "a" {
		t.Fatalf("agents run on US-1: %v, want only a's", w["US-1"])
	}
	if got := f.git("rev-parse", "main"); got != landed {
		t.Fatalf("main is %s, want a's landing %s", got, landed)
	}
	if refs := f.git("for-each-ref", "refs/wiggum", "refs/heads/wiggum"); refs != "" {
		t.Fatalf("left on the server:\n%s", refs)
	}
}

// refuseLandings is a pre-receive hook refusing every push that moves
// main, as a server whose landings are frozen does; the rest (claims)
// goes through.
const refuseLandings = `while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then
    echo "main is frozen for the release"
    exit 1
  fi
done
exit 0
`

// hangLandings is a pre-receive hook that holds every push moving main
// past the run's --net-timeout, then refuses it: a server that hangs at
// the landing.
const hangLandings = `while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then
    sleep 6
    exit 1
  fi
done
exit 0
`

// A story whose attempt finished and whose landing the server did not
// take - gone, hanging past --net-timeout, or refusing by a pre-receive
// hook - is kept: the run ends saying which branch holds it and that the
// next run lands it. The next run, the server back, lands it without
// running its agent again; a refusal that stays is reported again, with
// the server's words, and the work kept again - no agent runs on the story
// twice. Before, the run closed its journal, the finished work stayed on a
// local wiggum/US-1 never mentioned, and the next run gave the story to an
// agent again from scratch.
func TestUnlandedFinishedWorkLandsNextRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		code int // the first run's exit
		said string
	}{
		{"server gone", 1, "connection refused"},
		{"server hangs", 5, "did not finish in time"},
		{"refused by a hook", 5, "main is frozen for the release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, "daemon", 1)
			args := []string{"--lease", "1h", "--net-timeout", "3s"}
			a := f.machine("a", []string{"AGENT_MODE=wait"}, args...)
			startedStory(t, f.signal)
			switch tc.name {
			case "server gone":
				f.srv.Stop()
			case "server hangs":
				gitserver.Hook(t, f.bare, "pre-receive", hangLandings)
			default:
				gitserver.Hook(t, f.bare, "pre-receive", refuseLandings)
			}
			if err := os.WriteFile(filepath.Join(f.signal, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if code := waitLong(t, a, 2*time.Minute); code != tc.code {
				t.Fatalf("the first run exited %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, a.stdout(), a.stderr())
			}
			clone := filepath.Join(f.dir, "a")
			out := a.stdout()
			if !strings.Contains(out, tc.said) || !strings.Contains(out, "US-1: its finished work is kept on wiggum/US-1") ||
				!strings.Contains(out, "finished work not landed, kept for the next run: US-1 on wiggum/US-1") {
				t.Fatalf("the first run does not say why US-1 did not land (%q), and that its work is kept on wiggum/US-1 for the next run:\n%s", tc.said, out)
			}
			// Not counted done: it is not on the server's main.
			if !strings.Contains(out, "0 story(ies) done") {
				t.Fatalf("the first run counts US-1, which it did not land, as done:\n%s", out)
			}
			// The way to resume names the remote: without --remote a run
			// would work the plan alone, not land the kept work.
			if st := wiggum(t, clone, nil, "status"); !strings.Contains(st.stdout, "wiggum run --plan plan.md --remote origin") {
				t.Fatalf("status does not give the resume command with --remote origin:\n%s", st.stdout)
			}
			if got := strings.TrimSpace(mustRun(t, clone, "git", "show", "wiggum/US-1:f-US-1.txt")); got != "US-1 by a" {
				t.Fatalf("the finished work is not on the local wiggum/US-1: %q", got)
			}
			if n := f.landings()["US-1"]; n != 0 {
				t.Fatalf("US-1 landed %d times in the first run", n)
			}
			switch tc.name {
			case "server gone":
				f.srv.Restart(t)
			case "server hangs":
				gitserver.RemoveHook(t, f.bare, "pre-receive")
			default:
				// The refusal stays: reported again, the work kept again,
				// no agent run.
				again := f.machine("a", nil, args...)
				if code := waitLong(t, again, 2*time.Minute); code != 5 {
					t.Fatalf("the run against the hook still refusing exited %d, want 5\nstdout: %s\nstderr: %s", code, again.stdout(), again.stderr())
				}
				if out := again.stdout(); !strings.Contains(out, tc.said) || !strings.Contains(out, "US-1: its finished work is kept on wiggum/US-1") {
					t.Fatalf("the run against the hook still refusing does not report it and keep the work:\n%s", out)
				}
				if w := f.winners()["US-1"]; len(w) != 1 {
					t.Fatalf("US-1's agent ran %d times (%v), want once", len(w), w)
				}
				gitserver.RemoveHook(t, f.bare, "pre-receive")
			}
			next := f.machine("a", nil, args...)
			if code := waitLong(t, next, 2*time.Minute); code != 0 {
				t.Fatalf("the next run exited %d\nstdout: %s\nstderr: %s", code, next.stdout(), next.stderr())
			}
			if w := f.winners()["US-1"]; len(w) != 1 {
				t.Fatalf("US-1's agent ran %d times (%v), want once: the next run redid finished work\nstdout: %s", len(w), w, next.stdout())
			}
			if !strings.Contains(next.stdout(), "landing US-1: it finished in an earlier run, which could not land it (") {
				t.Fatalf("the next run does not say it lands the work the earlier run kept:\n%s", next.stdout())
			}
			if n := f.landings()["US-1"]; n != 1 {
				t.Fatalf("US-1 landed %d times, want once\nstdout: %s", n, next.stdout())
			}
			if got := f.git("show", "main:f-US-1.txt"); got != "US-1 by a" {
				t.Fatalf("main does not have the finished work of US-1: %q", got)
			}
			if plan := f.git("show", "main:plan.md"); !strings.Contains(plan, "- [x] US-1") {
				t.Fatalf("US-1 is not ticked on main:\n%s", plan)
			}
			if refs := f.git("for-each-ref", "refs/wiggum", "refs/heads/wiggum"); refs != "" {
				t.Fatalf("left on the server:\n%s", refs)
			}
			if refs := strings.TrimSpace(mustRun(t, clone, "git", "for-each-ref", "refs/heads/wiggum", "refs/wiggum/backup")); refs != "" {
				t.Fatalf("left in the clone after the landing:\n%s", refs)
			}
		})
	}
}

// The finished work a run kept when the server was gone (above) is not
// landed over another machine's: when another machine did the story
// meanwhile (its claim released by an operator), the next run here says
// the story landed since and keeps this work on its local branch for the
// person - no agent runs here again, and nothing is lost.
func TestUnlandedFinishedWorkLandedElsewhereIsKept(t *testing.T) {
	f := newFleet(t, "daemon", 1)
	args := []string{"--lease", "1h", "--net-timeout", "3s"}
	a := f.machine("a", []string{"AGENT_MODE=wait"}, args...)
	startedStory(t, f.signal)
	f.srv.Stop()
	if err := os.WriteFile(filepath.Join(f.signal, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := waitLong(t, a, 2*time.Minute); code != 1 {
		t.Fatalf("the first run exited %d, want 1\nstdout: %s\nstderr: %s", code, a.stdout(), a.stderr())
	}
	f.srv.Restart(t)
	gitserver.Clone(t, f.srv.URL("r.git"), filepath.Join(f.dir, "b"))
	if r := wiggum(t, filepath.Join(f.dir, "b"), nil, "claims", "release", "US-1", "--remote", "origin", "--force"); r.code != 0 {
		t.Fatalf("claims release exited %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	b := f.machine("b", nil, args...)
	if code := waitLong(t, b, 2*time.Minute); code != 0 {
		t.Fatalf("b exited %d\nstdout: %s\nstderr: %s", code, b.stdout(), b.stderr())
	}
	next := f.machine("a", nil, args...)
	if code := waitLong(t, next, 2*time.Minute); code != 0 {
		t.Fatalf("the next run on a exited %d\nstdout: %s\nstderr: %s", code, next.stdout(), next.stderr())
	}
	if w := f.winners()["US-1"]; strings.Join(w, ",") != "a,b" {
		t.Fatalf("US-1's agent ran on %v, want once on a, once on b", w)
	}
	if n := f.landings()["US-1"]; n != 1 {
		t.Fatalf("US-1 landed %d times, want once (b's)", n)
	}
	if out := next.stdout(); !strings.Contains(out, "US-1 finished in an earlier run and was landed since (by another machine)") ||
		!strings.Contains(out, "stays on wiggum/US-1") {
		t.Fatalf("the next run on a does not say US-1 landed elsewhere and its work stays on wiggum/US-1:\n%s", out)
	}
	if got := strings.TrimSpace(mustRun(t, filepath.Join(f.dir, "a"), "git", "show", "wiggum/US-1:f-US-1.txt")); got != "US-1 by a" {
		t.Fatalf("a's finished work is not kept on wiggum/US-1: %q", got)
	}
}

// slowLandings is a pre-receive hook that holds every push moving main
// past the run's --net-timeout, then lets it through: the landing times
// out on the machine and is made on the server afterwards.
const slowLandings = `while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then
    sleep 6
  fi
done
exit 0
`

// A landing whose push timed out on this machine and was made on the
// server afterwards is this machine's own: the next run says so, not that
// another machine landed the story.
func TestOwnLandingMadeAfterTimeoutIsNamedOwn(t *testing.T) {
	f := newFleet(t, "daemon", 1)
	args := []string{"--lease", "1h", "--net-timeout", "3s"}
	gitserver.Hook(t, f.bare, "pre-receive", slowLandings)
	a := f.machine("a", nil, args...)
	if code := waitLong(t, a, 2*time.Minute); code != 5 {
		t.Fatalf("the first run exited %d, want 5\nstdout: %s\nstderr: %s", code, a.stdout(), a.stderr())
	}
	gitserver.RemoveHook(t, f.bare, "pre-receive")
	deadline := time.Now().Add(30 * time.Second)
	for f.landings()["US-1"] != 1 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	next := f.machine("a", nil, args...)
	if code := waitLong(t, next, 2*time.Minute); code != 0 {
		t.Fatalf("the next run exited %d\nstdout: %s\nstderr: %s", code, next.stdout(), next.stderr())
	}
	if out := next.stdout(); !strings.Contains(out, "US-1 finished in an earlier run and was landed since by this machine") {
		t.Fatalf("the next run does not say the landing was this machine's own:\n%s", out)
	}
}
