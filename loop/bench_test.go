package loop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkIterationOverhead measures one loop iteration with a no-op
// agent against the raw commands such an iteration needs (read HEAD, run
// the agent, look at the tree, tick the plan and commit it), both in the
// same run, and reports the ratio. bench/loop.sh does the same from the
// outside, with the real binary.
func BenchmarkIterationOverhead(b *testing.B) {
	n := b.N
	st, p := newRepo(b, n)
	raw, rawPlan := newRepo(b, n)
	b.ResetTimer()

	start := time.Now()
	for i := 1; i <= n; i++ {
		rawIteration(b, raw.Repo.Root, rawPlan.Path(), i)
	}
	rawPer := time.Since(start) / time.Duration(n)

	o := opts(p, "true")
	o.MaxIter = min(n, MaxIterationsLimit)
	start = time.Now()
	sum, err := Run(context.Background(), st, o)
	loopPer := time.Since(start) / time.Duration(max(sum.Iterations, 1))
	if err != nil && n <= MaxIterationsLimit {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(loopPer.Microseconds())/1000, "ms/iteration")
	b.ReportMetric(float64(rawPer.Microseconds())/1000, "raw-ms/iteration")
	b.ReportMetric(float64(loopPer)/float64(rawPer), "x-raw")
}

func rawIteration(b *testing.B, dir, planPath string, i int) {
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("git", "rev-parse", "HEAD")
	run("sh", "-c", "true")
	run("git", "status", "--porcelain")
	data, err := os.ReadFile(planPath)
	if err != nil {
		b.Fatal(err)
	}
	line := fmt.Sprintf("- [ ] US-%d:", i)
	data = []byte(strings.Replace(string(data), line, fmt.Sprintf("- [x] US-%d:", i), 1))
	if err := os.WriteFile(planPath, data, 0o644); err != nil {
		b.Fatal(err)
	}
	run("git", "commit", "-q", "-m", fmt.Sprintf("US-%d: mark done", i), "--", filepath.Base(planPath))
}
