// Command scaleio supports bench/scale-io.sh: the scale curves of what
// grows with input rather than with the repository.
//
//	scaleio hooks  ...  `wiggum hook claude` on PostToolUse payloads of
//	                    growing size against a minimal Go reader of the same
//	                    payload: wall and CPU time, and peak RSS of each
//	                    process (wait4's ru_maxrss)
//	scaleio events ...  `wiggum status` and `wiggum watch --once` on the
//	                    state a month of runs leaves (event log, commit
//	                    journal), at growing ages: time and peak RSS
//
// Both append rows to a TSV in bench/scale.sh's format (case, op, wiggum,
// floor, before, wiggum CPU, floor CPU, before CPU), which `scalecurve
// plot` draws; peak RSS rows carry MB in the time columns.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/bench/internal/stats"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: scaleio hooks|events [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	wiggum := fs.String("wiggum", "wiggum", "the wiggum binary")
	minimal := fs.String("minimal", "", "the baseline reader binary")
	dir := fs.String("dir", "", "a git working tree to run in")
	runs := fs.Int("n", 20, "runs per command and size")
	tsv := fs.String("tsv", "", "append results to this TSV")
	sizes := fs.String("sizes", "1024,1048576,104857600", "hooks: payload sizes in bytes")
	days := fs.String("days", "1,7,30", "events: ages of the repository in days")
	perDay := fs.Int("runs-per-day", 30, "events: runs per day")
	stories := fs.Int("stories", 25, "events: stories per run")
	fs.Parse(os.Args[2:])
	out, err := os.OpenFile(*tsv, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer out.Close()
	switch os.Args[1] {
	case "hooks":
		hooks(*wiggum, *minimal, *dir, *runs, ints(*sizes), out)
	case "events":
		events(*wiggum, *minimal, *dir, *runs, ints(*days), *perDay, *stories, out)
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}

func ints(list string) []int {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bad number %q\n", f)
			os.Exit(2)
		}
		out = append(out, n)
	}
	return out
}

// sample is one run of one command.
type sample struct {
	wall, cpu time.Duration
	rssKB     int64
}

// result is the medians of a command's runs (peak RSS: the largest).
type result struct {
	wall, cpu time.Duration
	rssKB     int64
}

func summarize(ss []sample) result {
	var walls, cpus []time.Duration
	var r result
	for _, s := range ss {
		walls = append(walls, s.wall)
		cpus = append(cpus, s.cpu)
		r.rssKB = max(r.rssKB, s.rssKB)
	}
	r.wall, r.cpu = stats.Median(walls), stats.Median(cpus)
	return r
}

// run starts argv in dir with stdin and returns its times and peak RSS.
//
// The peak RSS comes from a second run under GNU time, which forks the
// command from its own small process: Linux charges a child started
// straight from this one (Go starts children with CLONE_VM) this process's
// high-water mark at exec, which here holds a 100 MB payload.
func run(dir string, stdin []byte, argv []string) sample {
	start := func(argv []string) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = dir
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", strings.Join(argv, " "), err)
			os.Exit(1)
		}
		return cmd
	}
	began := time.Now()
	cmd := start(argv)
	s := sample{wall: time.Since(began), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	rss, err := os.CreateTemp("", "scaleio-rss")
	if err != nil {
		panic(err)
	}
	rss.Close()
	defer os.Remove(rss.Name())
	start(append([]string{gnuTime, "-f", "%M", "-o", rss.Name()}, argv...))
	data, _ := os.ReadFile(rss.Name())
	s.rssKB, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64) // kilobytes
	if err != nil {
		fmt.Fprintf(os.Stderr, "GNU time said %q\n", data)
		os.Exit(1)
	}
	return s
}

// gnuTime measures a command's peak RSS (Debian: apt-get install time).
const gnuTime = "/usr/bin/time"

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func row(out *os.File, label, op string, w, f, wc, fc float64) {
	fmt.Fprintf(out, "%s\t%s\t%.2f\t%.2f\t0\t%.2f\t%.2f\t0\n", label, op, w, f, wc, fc)
}

func human(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%dMB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%dKB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// hooks times a PostToolUse whose tool output is size bytes of test log.
func hooks(wiggum, minimal, dir string, n int, sizes []int, out *os.File) {
	fmt.Printf("%-7s %-8s %10s %10s %6s %9s %9s %6s %10s %10s\n", "payload", "runs", "wiggum", "minimal", "ratio", "wig cpu", "min cpu", "ratio", "wig RSS", "min RSS")
	for _, size := range sizes {
		payload := postPayload(dir, size)
		rounds := n
		if size > 16<<20 {
			rounds = min(n, 5)
		}
		var wig, base []sample
		for i := range rounds + 1 {
			b := run(dir, payload, []string{minimal})
			w := run(dir, payload, []string{wiggum, "hook", "claude"})
			if i > 0 { // the first round warms the page cache
				base, wig = append(base, b), append(wig, w)
			}
		}
		w, b := summarize(wig), summarize(base)
		label := human(size)
		fmt.Printf("%-7s %-8d %8.1fms %8.1fms %5.2fx %7.1fms %7.1fms %5.2fx %8.1fMB %8.1fMB\n", label, rounds,
			ms(w.wall), ms(b.wall), ms(w.wall)/ms(b.wall), ms(w.cpu), ms(b.cpu), ms(w.cpu)/ms(b.cpu), float64(w.rssKB)/1024, float64(b.rssKB)/1024)
		row(out, label, "hook PostToolUse", ms(w.wall), ms(b.wall), ms(w.cpu), ms(b.cpu))
		row(out, label, "hook peak RSS (MB)", float64(w.rssKB)/1024, float64(b.rssKB)/1024, 0, 0)
	}
}

// postPayload is a Claude Code PostToolUse payload whose tool output is
// about size bytes of `go test -v` lines.
func postPayload(dir string, size int) []byte {
	var sb strings.Builder
	for i := 0; sb.Len() < size; i++ {
		fmt.Fprintf(&sb, "=== RUN   TestCase%d\n--- PASS: TestCase%d (0.00s)\n", i, i)
	}
	p := map[string]any{"session_id": "bench", "transcript_path": "/dev/null", "cwd": dir, "hook_event_name": "PostToolUse",
		"tool_name": "Bash", "tool_input": map[string]any{"command": "go test -v ./..."},
		"tool_response": map[string]any{"stdout": sb.String()[:size], "stderr": "", "interrupted": false}}
	data, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return data
}

// events times status and watch on the state of a repository days old.
func events(wiggum, minimal, dir string, n int, days []int, perDay, stories int, out *os.File) {
	rt := filepath.Join(dir, ".ralph", "wiggum")
	if err := os.MkdirAll(rt, 0o755); err != nil {
		panic(err)
	}
	var status1 result // status at the youngest age: its floor
	fmt.Printf("%-5s %8s %8s %10s %10s %10s %6s %10s %10s %10s %10s\n", "age", "log", "journal", "status", "status RSS",
		"watch", "ratio", "last run", "watch RSS", "base RSS", "status/1st")
	for k, d := range days {
		logSize, jSize, last := month(rt, d, perDay, stories)
		lastFile := filepath.Join(dir, "last-run.jsonl")
		if err := os.WriteFile(lastFile, last, 0o644); err != nil {
			panic(err)
		}
		var st, wa, base []sample
		for i := range n + 1 {
			s := run(dir, nil, []string{wiggum, "status", "--json"})
			w := run(dir, nil, []string{wiggum, "watch", "--once"})
			b := run(dir, nil, []string{minimal, lastFile})
			if i > 0 {
				st, wa, base = append(st, s), append(wa, w), append(base, b)
			}
		}
		s, w, b := summarize(st), summarize(wa), summarize(base)
		if k == 0 {
			status1 = s
		}
		label := fmt.Sprintf("%dd", d)
		fmt.Printf("%-5s %6.1fMB %6.1fMB %8.1fms %8.1fMB %8.1fms %5.2fx %8.1fms %8.1fMB %8.1fMB %9.2fx\n", label, float64(logSize)/1e6, float64(jSize)/1e6,
			ms(s.wall), float64(s.rssKB)/1024, ms(w.wall), ms(w.wall)/ms(b.wall), ms(b.wall), float64(w.rssKB)/1024, float64(b.rssKB)/1024, ms(s.wall)/ms(status1.wall))
		row(out, label, "watch --once vs decoding the last run", ms(w.wall), ms(b.wall), ms(w.cpu), ms(b.cpu))
		row(out, label, "watch peak RSS (MB)", float64(w.rssKB)/1024, float64(b.rssKB)/1024, 0, 0)
		row(out, label, "status vs status at "+fmt.Sprintf("%dd", days[0]), ms(s.wall), ms(status1.wall), ms(s.cpu), ms(status1.cpu))
		row(out, label, "status peak RSS (MB)", float64(s.rssKB)/1024, float64(status1.rssKB)/1024, 0, 0)
	}
	os.Remove(filepath.Join(dir, "last-run.jsonl"))
}

// month writes the event log and commit journal of days of serial runs,
// perDay a day, each of stories stories (per story: iteration_start, three
// tool events, iteration_end and a commit; one story in ten fails once and
// is rolled back). It returns both files' sizes and the last run's lines.
func month(rt string, days, perDay, stories int) (logSize, journalSize int64, last []byte) {
	var log, journal bytes.Buffer
	t := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var cur bytes.Buffer
	write := func(name string, fields map[string]any) {
		t = t.Add(700 * time.Millisecond)
		fields["event"], fields["time"], fields["session"] = name, t.Format(time.RFC3339Nano), "0123456789abcdef"
		b, _ := json.Marshal(fields)
		cur.Write(append(b, '\n'))
	}
	commit := 0
	for r := 0; r < days*perDay; r++ {
		cur.Reset()
		write("run_start", map[string]any{"plan": "plan.md", "agent": []string{"claude", "-p"}, "pid": 4242 + r, "workers": 1, "stories": stories, "done": 0})
		iter := 0
		for s := 1; s <= stories; s++ {
			id := fmt.Sprintf("US-%d", s)
			attempts := 1
			if s%10 == 0 {
				attempts = 2
			}
			for a := 1; a <= attempts; a++ {
				iter++
				write("iteration_start", map[string]any{"iteration": iter, "story": id, "title": "story number " + id, "attempt": a, "attempts": 3, "output": fmt.Sprintf(".ralph/wiggum/agent/%d.log", iter)})
				for k := 1; k <= 3; k++ {
					write("tool", map[string]any{"story": id, "iteration": iter, "tool": fmt.Sprintf("Bash: go test ./pkg%d/...", k), "input_tokens": 12000 * k, "output_tokens": 300 * k})
				}
				end := map[string]any{"iteration": iter, "story": id, "title": "story number " + id, "attempt": a, "duration_ms": 61000, "cost_usd": 0.42, "input_tokens": 36000, "output_tokens": 900}
				if a < attempts {
					end["outcome"], end["backup"] = "failed (gate)", "refs/wiggum/backup/20261123T000000Z-"+id
				} else {
					commit++
					sha := fmt.Sprintf("%040x", commit)
					end["outcome"], end["commit"] = "done", sha
					line, _ := json.Marshal(map[string]any{"sha": sha, "session": "0123456789abcdef", "branch": "refs/heads/main", "time": t.Format(time.RFC3339Nano)})
					journal.Write(append(line, '\n'))
				}
				write("iteration_end", end)
			}
		}
		write("run_end", map[string]any{"iterations": iter, "completed": []string{}, "open": 0})
		log.Write(cur.Bytes())
		t = t.Add(time.Duration(24*60/perDay) * time.Minute)
	}
	if err := os.WriteFile(filepath.Join(rt, "events.jsonl"), log.Bytes(), 0o644); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(rt, "journal.jsonl"), journal.Bytes(), 0o644); err != nil {
		panic(err)
	}
	return int64(log.Len()), int64(journal.Len()), bytes.Clone(cur.Bytes())
}
