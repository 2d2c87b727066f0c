package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// soakAgent is the scripted agent of the soak: by story number it commits
// and leaves a file (n%5==0), leaves a file (1), fails its first attempt
// (2), hangs its first attempt past --timeout (3), or hits a usage limit on
// its first attempt, Claude's stream-json way (4; n%10==4 only, to keep the
// waits short). Every commit it makes and every file it leaves is recorded,
// with its object id, in a log outside the repository, before the next
// step, so a kill anywhere leaves nothing unrecorded that matters.
const soakAgent = `cat > /dev/null
S=$WIGGUM_STORY
D=$SOAK_DIR
n=${S#US-}
c=$(cat "$D/count/$S" 2>/dev/null || echo 0)
a=$((c + 1))
echo $a > "$D/count/$S"
echo "start $S $a $(date +%s%N)" >> "$D/log"
tok="$S attempt $a pid $$"
leave() { echo "$tok" > "$1"; echo "file $S $(git hash-object "$1") $1" >> "$D/log"; }
sleep 0.$((n % 4 + 1))
case $((n % 5)) in
0) echo "$tok" > "c-$S.txt"; git add "c-$S.txt"; git commit -q -m "agent: $tok"
   echo "commit $S $(git rev-parse HEAD)" >> "$D/log"
   leave "u-$S.txt" ;;
1) leave "u-$S.txt" ;;
2) leave "u-$S.txt"; if [ $a -eq 1 ]; then echo "FAIL: tests failed"; exit 1; fi ;;
3) leave "u-$S.txt"; if [ $a -eq 1 ]; then sleep 30; fi ;;
4) if [ $a -eq 1 ] && [ $((n % 10)) -eq 4 ]; then
     leave "p-$S.txt"
     echo '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":'$(( $(date +%s) + 1 ))',"rateLimitType":"five_hour"}}'
     exit 1
   fi
   leave "u-$S.txt" ;;
esac
`

// soakPoints are the steps between two durable effects where a kill is
// forced (WIGGUM_TEST_KILLPOINT) in some rounds; random kills cover the
// rest: dispatch, agent work, rollback, plan reads.
var soakPoints = []string{
	"worktree-created", "worktree-ahead", "attempt-committed", "attempt-done", "merge-intent", "merge-tree-moved",
	"merge-ref-moved", "land-ticked", "remove-saved", "remove-unregistered",
}

// soakResult is what the soak measured.
type soakResult struct {
	Kills   int `json:"kills"`
	Rounds  int `json:"rounds"`
	Runs    int `json:"runs"`
	Stories int `json:"stories_merged"`
	Commits int `json:"agent_commits_checked"`
	Files   int `json:"agent_files_checked"`
	Lost    int `json:"lost"`
	// LandedOnResume counts the stories a killed run finished and never
	// landed that a resumed run landed instead of giving to the agent again.
	LandedOnResume int `json:"landed_on_resume"`
	// Redone counts stories started again after a kill found them done.
	Redone      int     `json:"redone_after_done"`
	FreshMS     float64 `json:"fresh_start_to_first_agent_ms"`
	ResumeMS    float64 `json:"resume_to_first_agent_ms"`
	ResumeRatio float64 `json:"resume_ratio"`
	Seconds     float64 `json:"seconds"`
	Complete    bool    `json:"complete"` // false: written after a round, the soak goes on
}

// TestSoakKillResume runs an 8-worker run over a 40-story plan with the
// scripted agents, SIGKILLs it at random moments and forced kill points,
// and resumes it, again and again, until WIGGUM_SOAK_KILLS kills (25 by
// default, for CI; bench/soak.sh runs 1,000) have landed and the plan is
// done; each finished plan is checked: every story merged exactly once,
// every commit and file an agent made reachable from main or refs/wiggum/,
// no story whose attempt a kill found recorded done started again (one
// finished and not yet landed is landed by the resumed run), no worktree,
// branch, lock or process left, git fsck clean.
func TestSoakKillResume(t *testing.T) {
	soak(t, 8, soakPoints, 25)
}

// TestSerialSoakKillResume is the soak of a serial run (no --workers): the
// same agents, plan and checks, SIGKILLed at random moments and at the
// kill points of a serial iteration. Every story is committed once with
// its tick, and no story whose attempt a kill found finished (its agent
// exited 0 and its checks passed, or its end recorded done) is started
// again.
func TestSerialSoakKillResume(t *testing.T) {
	soak(t, 1, serialSoakPoints, 15)
}

// serialSoakPoints are the kill points of a serial iteration.
var serialSoakPoints = []string{"agent-exited", "attempt-passed", "serial-ticked", "commit-staged", "attempt-committed", "attempt-done", "attempt-failed", "attempt-rolled-back"}

// soak runs plans with workers (1: serial) through kills at random moments
// and at points until WIGGUM_SOAK_KILLS kills (kills by default, for CI)
// have landed.
func soak(t *testing.T, workers int, points []string, kills int) {
	if v := os.Getenv("WIGGUM_SOAK_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WIGGUM_SOAK_KILLS=%q: want a positive number", v)
		}
		kills = n
	}
	began := time.Now()
	res := soakResult{}
	var fresh, resumed []float64
	for res.Kills < kills {
		f, r := soakRound(t, &res, kills, workers, points)
		fresh = append(fresh, f...)
		resumed = append(resumed, r...)
		res.Rounds++
		t.Logf("round %d done: %d kills so far, %d runs, %s", res.Rounds, res.Kills, res.Runs, time.Since(began).Round(time.Second))
		if t.Failed() {
			return
		}
		// The figures so far, after every round that passed its checks,
		// for a long soak read before it ends.
		writeSoakReport(t, res, fresh, resumed, began, false)
	}
	writeSoakReport(t, res, fresh, resumed, began, true)
}

func writeSoakReport(t *testing.T, res soakResult, fresh, resumed []float64, began time.Time, final bool) {
	res.Complete = final
	res.Seconds = time.Since(began).Seconds()
	res.FreshMS, res.ResumeMS = median(fresh), median(resumed)
	if res.FreshMS > 0 {
		res.ResumeRatio = res.ResumeMS / res.FreshMS
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	if final {
		t.Logf("soak: %s", out)
	}
	if path := os.Getenv("WIGGUM_SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// soakRound runs one plan to completion through kills, then checks it. It
// returns the start-to-first-agent times of fresh and resumed runs.
func soakRound(t *testing.T, res *soakResult, kills, workers int, points []string) (fresh, resumed []float64) {
	const stories = 40
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	soak := filepath.Join(dir, "soak")
	for _, d := range []string{repo, filepath.Join(soak, "count")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agent := filepath.Join(soak, "agent.sh")
	var plan strings.Builder
	for i := 1; i <= stories; i++ {
		fmt.Fprintf(&plan, "- [ ] US-%d: story %d\n", i, i)
	}
	writeFile(t, agent, soakAgent)
	writeFile(t, filepath.Join(repo, "plan.md"), plan.String())
	mustRun(t, repo, "git", "init", "-q")
	mustRun(t, repo, "git", "add", "plan.md")
	mustRun(t, repo, "git", "commit", "-q", "-m", "init")

	resume := "--plan plan.md"
	if workers > 1 {
		resume += fmt.Sprintf(" --workers %d", workers)
	}
	args := append(strings.Fields("run "+resume), "--agent-cmd", "sh "+agent,
		"--timeout", "2s", "--grace", "200ms", "--wait-on-limit", "--retries", "3", "--no-progress", "1000", "-q")
	logPath := filepath.Join(soak, "log")
	first := true
	// doneAt: for each story a kill found recorded as done, how many
	// times its agent had started then - it must never start again.
	doneAt := map[string]int{}
	// outs: every run's output, to say what each run did with a story.
	var outs []string
	// startup estimates how long a run takes to get its first agent going
	// on this machine now (it grows with the load): kills are spread over
	// that window and past it, and one run in three gets time to land
	// stories, so every plan finishes whatever the load.
	startup := 1500 * time.Millisecond
	for run := 0; ; run++ {
		if run > 3000 {
			t.Fatalf("the plan did not finish in %d runs", run)
		}
		var env []string
		env = append(env, "SOAK_DIR="+soak)
		killing := res.Kills < kills
		if killing && rand.N(4) == 0 {
			env = append(env, "WIGGUM_TEST_KILLPOINT="+points[rand.N(len(points))])
		}
		window := startup * 3 / 2
		delay := rand.N(window)
		if rand.N(3) == 0 {
			delay = window + rand.N(8*time.Second)
		}
		if first {
			// The fresh start is the baseline of the resume cost: let an
			// agent start before the kill.
			delay = max(delay, 2*time.Second)
		}
		started := time.Now()
		p := startWiggum(t, repo, env, args...)
		res.Runs++
		if killing {
			select {
			case <-p.done:
			case <-time.After(delay):
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		select {
		case <-p.done:
		case <-time.After(3 * time.Minute):
			_ = p.cmd.Process.Signal(syscall.SIGQUIT)
			time.Sleep(time.Second)
			t.Fatalf("run %d (killing %v) did not end in 3 minutes\nstdout:\n%s\nstderr:\n%s\nprocesses: %v", run, killing, tail(p.stdout(), 4000), tail(p.stderr(), 20000), withMarker(soak))
		}
		code := p.wait(t)
		res.LandedOnResume += strings.Count(p.stdout(), ": it finished before the crash (") + strings.Count(p.stdout(), ": its attempt had finished before the crash (")
		outs = append(outs, fmt.Sprintf("run %d (exit %d):\n%s", run, code, p.stdout()))
		if ms := firstAgentAfter(logPath, started); ms > 0 {
			startup = (startup*3 + time.Duration(ms*float64(time.Millisecond))) / 4
			if first {
				fresh = append(fresh, ms)
			} else {
				resumed = append(resumed, ms)
			}
		}
		if firstAgentAfter(logPath, started) == 0 && startup < 20*time.Second {
			// Killed before any agent started: the machine is slower than
			// the estimate; widen it, so runs get past their recovery.
			startup = startup * 5 / 4
		}
		first = false
		switch code {
		case 0:
			soakCheck(t, repo, soak, stories, res, workers == 1)
			starts := agentStarts(t, logPath)
			for s, n := range doneAt {
				if starts[s] != n {
					res.Redone++
					t.Errorf("%s was recorded done before a kill, with %d agent start(s), and started again (%d in all); what each run said of it:\n%s", s, n, starts[s], storyLines(outs, s))
				}
			}
			return fresh, resumed
		case 128 + int(syscall.SIGKILL):
			res.Kills++
			starts := agentStarts(t, logPath)
			for _, s := range recordedDone(t, repo) {
				if _, ok := doneAt[s]; !ok {
					doneAt[s] = starts[s]
				}
			}
			if res.Kills%10 == 0 {
				st := wiggum(t, repo, nil, "status", "--json")
				var s struct {
					Resume *struct {
						Interrupted bool   `json:"interrupted"`
						Command     string `json:"resume_command"`
					} `json:"resume"`
				}
				if st.code != 0 || json.Unmarshal([]byte(st.stdout), &s) != nil || s.Resume == nil || !s.Resume.Interrupted || s.Resume.Command != "wiggum run "+resume {
					t.Fatalf("status after a kill does not say the run was interrupted and how to resume: exit %d\n%s\n%s", st.code, st.stdout, st.stderr)
				}
			}
		default:
			t.Fatalf("run %d exited %d\nstdout:\n%s\nstderr:\n%s", run, code, tail(p.stdout(), 3000), p.stderr())
		}
	}
}

// storyLines keeps, of each run's output, its first line and the lines
// about story.
func storyLines(outs []string, story string) string {
	var b strings.Builder
	for _, out := range outs {
		lines := strings.Split(out, "\n")
		b.WriteString(lines[0] + "\n")
		for _, l := range lines[1:] {
			if strings.Contains(l, story+":") || strings.Contains(l, story+" ") || strings.Contains(l, "["+story+"]") {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	return b.String()
}

// agentStarts counts the soak agent's starts per story.
func agentStarts(t *testing.T, logPath string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		if fs := strings.Fields(line); len(fs) == 4 && fs[0] == "start" {
			n[fs[1]]++
		}
	}
	return n
}

// recordedDone reads from wiggum status the stories the interrupted run
// recorded as done, or as finished in the main tree and not yet committed
// (a serial attempt that passed its checks).
func recordedDone(t *testing.T, repo string) []string {
	t.Helper()
	st := wiggum(t, repo, nil, "status", "--json")
	var s struct {
		Resume *struct {
			Done     []string `json:"done"`
			Finished []string `json:"finished"`
		} `json:"resume"`
	}
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &s) != nil {
		t.Fatalf("status after a kill: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	if s.Resume == nil {
		return nil
	}
	return append(s.Resume.Done, s.Resume.Finished...)
}

// firstAgentAfter is how long after t0 the first agent of a run started,
// in milliseconds, or 0 when none did.
func firstAgentAfter(logPath string, t0 time.Time) float64 {
	f, err := os.Open(logPath)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 || fs[0] != "start" {
			continue
		}
		ns, err := strconv.ParseInt(fs[3], 10, 64)
		if err != nil || ns < t0.UnixNano() {
			continue
		}
		return float64(ns-t0.UnixNano()) / 1e6
	}
	return 0
}

// soakCheck verifies a finished plan; serial: of a serial run, which
// commits each story's tick with its work.
func soakCheck(t *testing.T, repo, soak string, stories int, res *soakResult, serial bool) {
	t.Helper()
	plan, err := os.ReadFile(filepath.Join(repo, "plan.md"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plan), "[ ]") {
		t.Fatalf("the run exited 0 with open stories:\n%s", plan)
	}
	// Every story merged exactly once: one tick commit each, at most one
	// merge commit each, and its work in the tree. Serially: one commit of
	// the story's own (work and tick), no tick commit.
	subjects := strings.Split(strings.TrimSpace(mustRun(t, repo, "git", "log", "--format=%s", "main")), "\n")
	for i := 1; i <= stories; i++ {
		id := fmt.Sprintf("US-%d", i)
		ticks, merges, own := 0, 0, 0
		for _, s := range subjects {
			if s == id+": mark done" {
				ticks++
			}
			if strings.HasPrefix(s, "Merge "+id+": ") {
				merges++
			}
			if s == fmt.Sprintf("%s: story %d", id, i) {
				own++
			}
		}
		if serial && (ticks != 0 || own != 1) {
			t.Errorf("%s: %d tick commits and %d commits of its own on main, want 0 and 1", id, ticks, own)
		}
		if !serial && (ticks != 1 || merges > 1) {
			t.Errorf("%s: %d tick commits and %d merges on main, want 1 and at most 1", id, ticks, merges)
		}
		if _, err := os.Stat(filepath.Join(repo, "u-"+id+".txt")); err != nil {
			t.Errorf("%s: its work is not in the tree: %v", id, err)
		}
		res.Stories++
	}
	// Everything the agents made is reachable from main or refs/wiggum/.
	refs := strings.Fields(mustRun(t, repo, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/"))
	objs := map[string]bool{}
	out := mustRun(t, repo, "git", append([]string{"rev-list", "--objects", "main"}, refs...)...)
	for _, line := range strings.Split(out, "\n") {
		if sha, _, _ := strings.Cut(line, " "); sha != "" {
			objs[sha] = true
		}
	}
	data, err := os.ReadFile(filepath.Join(soak, "log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 3 || (fs[0] != "commit" && fs[0] != "file") {
			continue
		}
		if fs[0] == "commit" {
			res.Commits++
		} else {
			res.Files++
		}
		if !objs[fs[2]] {
			res.Lost++
			t.Errorf("lost: %s", line)
		}
	}
	// Nothing left behind.
	if wts := strings.Count(mustRun(t, repo, "git", "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees registered after the run, want only the main one:\n%s", wts, mustRun(t, repo, "git", "worktree", "list"))
	}
	if ents, _ := os.ReadDir(filepath.Join(repo, ".ralph/wiggum/worktrees")); len(ents) > 0 {
		t.Errorf("worktree directories left: %d", len(ents))
	}
	if b := mustRun(t, repo, "git", "for-each-ref", "refs/heads/wiggum/"); b != "" {
		t.Errorf("worker branches left:\n%s", b)
	}
	st := wiggum(t, repo, nil, "status", "--json")
	var status struct {
		Lock struct{ Held bool } `json:"lock"`
		Run  *struct {
			Interrupted bool `json:"interrupted"`
		} `json:"resume"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || status.Lock.Held || status.Run != nil {
		t.Errorf("status after the run: %v\n%s", err, st.stdout)
	}
	eventually(t, "the agents' processes to be gone", func() bool { return len(withMarker(soak)) == 0 })
	if r := run(t, repo, nil, "git", "fsck", "--no-progress", "--no-dangling"); r.code != 0 || strings.TrimSpace(r.stdout+r.stderr) != "" {
		t.Errorf("git fsck: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
