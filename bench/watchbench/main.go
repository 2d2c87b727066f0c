// Command watchbench times `wiggum watch --once` on a generated event log
// of a 1,000-story, 8-worker run against two baselines in the same run:
// `cat` of the log and a minimal Go program that decodes every line. See
// bench/watch.sh.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/wiggum-dev/wiggum/bench/internal/stats"
)

func main() {
	wiggum := flag.String("wiggum", "wiggum", "the wiggum binary")
	minimal := flag.String("minimal", "", "the minimal reader binary")
	dir := flag.String("dir", "", "a git working tree to write the log into")
	stories := flag.Int("stories", 1000, "stories in the generated run")
	workers := flag.Int("workers", 8, "workers in the generated run")
	runs := flag.Int("n", 30, "runs per command")
	flag.Parse()

	log := filepath.Join(*dir, ".ralph", "wiggum", "events.jsonl")
	lines, size := generate(log, *stories, *workers)
	fmt.Printf("event log: %d stories, %d workers, %d lines, %.1f MB\n", *stories, *workers, lines, float64(size)/1e6)

	cmds := []struct {
		name string
		argv []string
	}{
		{"cat events.jsonl", []string{"cat", log}},
		{"minimal Go reader (decode every line)", []string{*minimal, log}},
		{"wiggum watch --once", []string{*wiggum, "-C", *dir, "watch", "--once"}},
	}
	times := make([][]time.Duration, len(cmds))
	for range *runs {
		// Interleaved, so drift in the machine's load hits all alike.
		for i, c := range cmds {
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			cmd.Stdout = devnull
			began := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", c.name, err)
				os.Exit(1)
			}
			times[i] = append(times[i], time.Since(began))
			devnull.Close()
		}
	}
	fmt.Printf("%-40s %10s %10s %8s\n", fmt.Sprintf("command (median of %d)", *runs), "median", "max", "vs cat")
	base := stats.Median(times[0])
	for i, c := range cmds {
		m := stats.Median(times[i])
		fmt.Printf("%-40s %10s %10s %7.1fx\n", c.name, m.Round(10*time.Microsecond), slices.Max(times[i]).Round(10*time.Microsecond), float64(m)/float64(base))
	}
}

// generate writes the log a parallel run of n stories would leave: per
// story an iteration_start, three tool events and an iteration_end, a
// failed and rolled-back attempt for one story in ten, and a merge.
func generate(path string, n, workers int) (lines int, size int64) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		panic(err)
	}
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	t := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	write := func(name string, fields map[string]any) {
		t = t.Add(700 * time.Millisecond)
		fields["event"], fields["time"], fields["session"] = name, t.Format(time.RFC3339Nano), "0123456789abcdef"
		b, _ := json.Marshal(fields)
		f.Write(append(b, '\n'))
		lines++
	}
	write("run_start", map[string]any{"plan": "plan.md", "agent": []string{"claude", "-p"}, "pid": 999999, "workers": workers, "stories": n, "done": 0})
	iter := 0
	for s := 1; s <= n; s++ {
		id := fmt.Sprintf("US-%d", s)
		w := s%workers + 1
		attempts := 1
		if s%10 == 0 {
			attempts = 2
		}
		for a := 1; a <= attempts; a++ {
			iter++
			write("iteration_start", map[string]any{"iteration": iter, "story": id, "title": "story number " + id, "attempt": a, "attempts": 3, "worker": w, "output": fmt.Sprintf(".ralph/wiggum/agent/%d.log", iter)})
			for k := 1; k <= 3; k++ {
				write("tool", map[string]any{"story": id, "iteration": iter, "worker": w, "tool": fmt.Sprintf("Bash: go test ./pkg%d/...", k), "input_tokens": 12000 * k, "output_tokens": 300 * k})
			}
			end := map[string]any{"iteration": iter, "story": id, "title": "story number " + id, "attempt": a, "worker": w, "duration_ms": 61000, "cost_usd": 0.42, "input_tokens": 36000, "output_tokens": 900}
			if a < attempts {
				end["outcome"], end["backup"] = "failed (gate)", "refs/wiggum/backup/20261123T000000Z-"+id
			} else {
				end["outcome"], end["commit"] = "done", "abcdef1"
			}
			write("iteration_end", end)
		}
		write("merged", map[string]any{"story": id, "branch": "refs/heads/wiggum/" + id, "commit": "abcdef1234567890abcdef1234567890abcdef12", "fast_forward": false, "land_ms": 35.5})
	}
	write("run_end", map[string]any{"iterations": iter, "completed": []string{}, "open": 0})
	fi, _ := f.Stat()
	return lines, fi.Size()
}
