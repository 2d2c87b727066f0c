// Command hookbench times `wiggum hook claude` against a minimal Go program
// that only reads stdin and decodes the JSON, on the same payloads in the
// same run, and prints the ratios. See bench/hooks.sh.
//
// Besides the median wall time it prints each binary's median CPU time
// (user+system) and minor page faults per call: on a loaded machine the wall
// time moves with the other load, while faults do not move at all and CPU
// time far less, so they show where a difference comes from.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/bench/internal/stats"
)

func main() {
	wiggum := flag.String("wiggum", "wiggum", "the wiggum binary")
	before := flag.String("before", "", "an earlier wiggum binary to time in the same run (optional)")
	baseline := flag.String("baseline", "", "the minimal reader binary")
	linked := flag.String("linked", "", "the minimal reader with wiggum's packages linked (optional)")
	hookonly := flag.String("hookonly", "", "`wiggum hook` alone in a binary: internal/hookentry and its imports (optional)")
	dir := flag.String("dir", ".", "a git working tree to run in (the payloads' cwd)")
	runs := flag.Int("n", 300, "runs per case")
	type bin struct{ label, path string }
	var also []bin
	flag.Func("also", "LABEL=PATH: another stdin reader to time as a baseline (repeatable)", func(v string) error {
		label, path, ok := strings.Cut(v, "=")
		if !ok || label == "" || path == "" {
			return fmt.Errorf("want LABEL=PATH, got %q", v)
		}
		also = append(also, bin{label, path})
		return nil
	})
	flag.Parse()

	var out strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&out, "=== RUN   TestCase%d\n    case_test.go:%d: checking case %d\n--- PASS: TestCase%d (0.00s)\n", i, i%90+10, i, i)
	}
	out.WriteString("PASS\nok  \texample.com/pkg\t0.412s\n")
	post := payload(*dir, "PostToolUse", map[string]any{"command": "go test -v ./..."}, map[string]any{"stdout": out.String(), "stderr": "", "interrupted": false})
	var failing strings.Builder
	failing.WriteString("Exit code 1\n")
	for i := range 1000 {
		fmt.Fprintf(&failing, "=== RUN   TestCase%d\n    case_test.go:%d: got %d, want %d\n--- FAIL: TestCase%d (0.00s)\n", i, i%90+10, i, i+1, i)
	}
	failing.WriteString("FAIL\nFAIL\texample.com/pkg\t0.412s\nFAIL\n")
	fail := payload(*dir, "PostToolUseFailure", map[string]any{"command": "go test -v ./..."}, nil)
	fail = append(fail[:len(fail)-1], []byte(`,"error":`+strconvQuote(failing.String())+`}`)...)
	pre := payload(*dir, "PreToolUse", map[string]any{"command": "cd src && go build ./... && git status"}, nil)

	cases := []struct {
		name string
		data []byte
		args []string
	}{
		{"PostToolUse, 1,000 lines of passing go test -v", post, []string{"hook", "claude"}},
		{"PostToolUseFailure, 1,000 failing tests, outside a session", fail, []string{"hook", "claude"}},
		{"PreToolUse `cd src && go build ./... && git status`, guard on", pre, []string{"hook", "claude", "--guard", "always"}},
		{"PreToolUse, same command, outside a session", pre, []string{"hook", "claude"}},
	}

	// The binaries, in the order they are run each round.
	bins := []bin{{"minimal", *baseline}}
	if *before != "" {
		bins = append(bins, bin{"before", *before})
	}
	bins = append(bins, bin{"wiggum", *wiggum})
	if *linked != "" {
		bins = append(bins, bin{"linked", *linked})
	}
	if *hookonly != "" {
		bins = append(bins, bin{"hook-only", *hookonly})
	}
	bins = append(bins, also...)

	fmt.Printf("median of %d interleaved runs per binary; ratio = wall time / minimal's\n", *runs)
	for _, c := range cases {
		cmds := make([][]string, len(bins))
		for i, b := range bins {
			cmds[i] = []string{b.path}
			if b.label == "wiggum" || b.label == "before" || b.label == "hook-only" {
				cmds[i] = append(cmds[i], c.args...)
			}
		}
		ms := timeAll(*dir, c.data, *runs, cmds)
		fmt.Printf("\n%s\n", c.name)
		fmt.Printf("  %-14s %10s %7s %10s %8s\n", "binary", "wall", "ratio", "cpu", "faults")
		for i, b := range bins {
			m := ms[i]
			fmt.Printf("  %-14s %10s %6.2fx %10s %8d\n", b.label, m.wall.Round(time.Microsecond), float64(m.wall)/float64(ms[0].wall),
				m.cpu.Round(time.Microsecond), m.faults)
		}
		if *linked != "" {
			w := ms[slices.IndexFunc(bins, func(b bin) bool { return b.label == "wiggum" })]
			l := ms[slices.IndexFunc(bins, func(b bin) bool { return b.label == "linked" })]
			fmt.Printf("  wiggum / linked: %.2fx\n", float64(w.wall)/float64(l.wall))
		}
	}
	if *linked != "" {
		fmt.Println("\nlinked: the minimal reader with every wiggum package linked (their init functions run, nothing else)")
	}
	if *hookonly != "" {
		fmt.Println("hook-only: the same hook in a binary of its own (internal/hookentry and its imports only): the floor for a hook inside one binary")
	}
	if len(also) > 0 {
		fmt.Println("other rows: the minimal reader with the named packages linked")
	}
}

func payload(cwd, event string, input, response map[string]any) []byte {
	p := map[string]any{"session_id": "bench", "transcript_path": "/dev/null", "cwd": cwd, "hook_event_name": event, "tool_name": "Bash", "tool_input": input}
	if response != nil {
		p["tool_response"] = response
	}
	data, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return data
}

func strconvQuote(s string) string {
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// measure is one binary's medians over the runs of a case.
type measure struct {
	wall, cpu time.Duration
	faults    int64 // minor page faults
}

// timeAll runs the commands in turn, n rounds after a warm-up, and returns
// each one's medians. Interleaving the runs spreads the machine's drift
// (other load, frequency changes) evenly over every command, so the ratios
// compare like with like.
func timeAll(dir string, stdin []byte, n int, cmds [][]string) []measure {
	walls := make([][]time.Duration, len(cmds))
	cpus := make([][]time.Duration, len(cmds))
	faults := make([][]int64, len(cmds))
	for i := range n + 10 {
		for j, argv := range cmds {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = dir
			cmd.Stdin = bytes.NewReader(stdin)
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
				os.Exit(1)
			}
			wall := time.Since(start)
			if i < 10 { // warm-up
				continue
			}
			walls[j] = append(walls[j], wall)
			cpus[j] = append(cpus[j], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				faults[j] = append(faults[j], ru.Minflt)
			}
		}
	}
	ms := make([]measure, len(cmds))
	for j := range cmds {
		ms[j] = measure{wall: stats.Median(walls[j]), cpu: stats.Median(cpus[j]), faults: stats.Median(faults[j])}
	}
	return ms
}
