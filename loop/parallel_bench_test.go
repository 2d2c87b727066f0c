package loop

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"
)

// BenchmarkParallel runs S stories whose agent sleeps T with N workers and
// reports the wall time against the ideal (S/N)·T, measured in the same
// run, and the landing cost per story (merge, plan tick and worktree
// removal under the repository mutex). N=1 is the serial loop, the
// baseline. bench/parallel.sh does the same with the real binary.
func BenchmarkParallel(b *testing.B) {
	const stories = 8
	const agentTime = 500 * time.Millisecond
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			var wall, merge time.Duration
			var merged int
			for range b.N {
				b.StopTimer()
				st, p := newRepo(b, stories)
				o := opts(p, fmt.Sprintf(`cat >/dev/null; sleep %.3f; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY"`, agentTime.Seconds()))
				o.Workers, o.Out = n, io.Discard
				b.StartTimer()
				began := time.Now()
				sum, err := Run(context.Background(), st, o)
				wall += time.Since(began)
				if err != nil || len(sum.Completed) != stories {
					b.Fatalf("run: %v, summary %+v", err, sum)
				}
				merge += sum.MergeTime
				if n > 1 {
					merged += len(sum.Completed)
				}
			}
			per := wall / time.Duration(b.N)
			ideal := time.Duration((stories+n-1)/n) * agentTime
			b.ReportMetric(float64(per.Milliseconds()), "wall-ms")
			b.ReportMetric(float64(ideal.Milliseconds()), "ideal-ms")
			b.ReportMetric(float64(per)/float64(ideal), "x-ideal")
			if merged > 0 {
				b.ReportMetric(float64(merge.Microseconds())/1000/float64(merged), "land-ms/story")
			}
		})
	}
}
