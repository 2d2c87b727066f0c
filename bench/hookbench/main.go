// Command hookbench times `wiggum hook claude` against a minimal Go program
// that only reads stdin and decodes the JSON, on the same payloads in the
// same run, and prints the ratios. See bench/hooks.sh.
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
	"time"
)

func main() {
	wiggum := flag.String("wiggum", "wiggum", "the wiggum binary")
	baseline := flag.String("baseline", "", "the minimal reader binary")
	linked := flag.String("linked", "", "the minimal reader with wiggum's packages linked (optional)")
	dir := flag.String("dir", ".", "a git working tree to run in (the payloads' cwd)")
	runs := flag.Int("n", 300, "runs per case")
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
	fmt.Printf("%-62s %10s %10s %7s", "case (median of "+fmt.Sprint(*runs)+" runs)", "minimal", "wiggum", "ratio")
	if *linked != "" {
		fmt.Printf(" %10s %7s", "linked", "ratio")
	}
	fmt.Println()
	for _, c := range cases {
		cmds := [][]string{{*baseline}, append([]string{*wiggum}, c.args...)}
		if *linked != "" {
			cmds = append(cmds, []string{*linked})
		}
		t := timeAll(*dir, c.data, *runs, cmds)
		base, wig := t[0], t[1]
		fmt.Printf("%-62s %10s %10s %6.2fx", c.name, base.Round(time.Microsecond), wig.Round(time.Microsecond), float64(wig)/float64(base))
		if *linked != "" {
			fmt.Printf(" %10s %6.2fx", t[2].Round(time.Microsecond), float64(t[2])/float64(base))
		}
		fmt.Println()
	}
	if *linked != "" {
		fmt.Println("linked: the minimal reader with every wiggum package linked (init functions only), the floor for any wiggum subcommand")
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

// timeAll runs the commands in turn, n rounds after a warm-up, and returns
// each one's median wall time. Interleaving the runs spreads the machine's
// drift (other load, frequency changes) evenly over every command, so the
// ratios compare like with like.
func timeAll(dir string, stdin []byte, n int, cmds [][]string) []time.Duration {
	times := make([][]time.Duration, len(cmds))
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
			if i >= 10 { // warm-up
				times[j] = append(times[j], time.Since(start))
			}
		}
	}
	med := make([]time.Duration, len(cmds))
	for j, ts := range times {
		slices.Sort(ts)
		med[j] = ts[len(ts)/2]
	}
	return med
}
