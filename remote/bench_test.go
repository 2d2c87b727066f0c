package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/gitserver"
)

// BenchmarkClaimLand is one story's coordination against git daemon on
// 127.0.0.1, without the agent, as a machine alone does it: claim from its
// last view of the server (claim push), then land on the tip it last saw
// (merge-tree, tick, atomic push). It reports the two parts per story; the
// baselines in the same run are one `git ls-remote` round trip to the same
// server as wiggum makes it (protocol v0, ls-remote-ms) and as git does by
// default (protocol v2, git-ls-remote-ms).
func BenchmarkClaimLand(b *testing.B) {
	gitserver.Require(b)
	root := b.TempDir()
	srvRoot := filepath.Join(root, "srv")
	if err := os.MkdirAll(srvRoot, 0o755); err != nil {
		b.Fatal(err)
	}
	gitserver.NewBare(b, srvRoot, "r.git")
	srv := gitserver.Start(b, "daemon", srvRoot)
	var plan strings.Builder
	n := b.N + 1
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&plan, "- [ ] US-%d: story %d\n", i, i)
	}
	gitserver.Seed(b, filepath.Join(root, "seed"), srv.URL("r.git"), map[string]string{"plan.md": plan.String()})
	dir := filepath.Join(root, "m")
	gitserver.Clone(b, srv.URL("r.git"), dir)
	ctx := context.Background()
	repo, err := git.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	r, err := Open(ctx, repo, "origin", Options{})
	if err != nil {
		b.Fatal(err)
	}
	// One work commit per story, made before the clock starts.
	v, err := r.Fetch(ctx, target)
	if err != nil {
		b.Fatal(err)
	}
	baseTree, err := repo.Run(ctx, "ls-tree", v.Tip)
	if err != nil {
		b.Fatal(err)
	}
	branches := make([]string, n+1)
	for i := 1; i <= n; i++ {
		blob, err := repo.RunEnv(ctx, nil, []byte(fmt.Sprintf("work %d\n", i)), "hash-object", "-w", "--stdin")
		if err != nil {
			b.Fatal(err)
		}
		tree, err := repo.RunEnv(ctx, nil, []byte(baseTree+fmt.Sprintf("100644 blob %s\tf-%d.txt\n", strings.TrimSpace(blob), i)), "mktree")
		if err != nil {
			b.Fatal(err)
		}
		c, err := repo.Run(ctx, "commit-tree", strings.TrimSpace(tree), "-p", v.Tip, "-m", fmt.Sprintf("US-%d work", i))
		if err != nil {
			b.Fatal(err)
		}
		branches[i] = "refs/heads/wiggum/US-" + fmt.Sprint(i)
		if _, err := repo.Run(ctx, "update-ref", branches[i], strings.TrimSpace(c)); err != nil {
			b.Fatal(err)
		}
	}
	var claim, land, rtt, gitRtt time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		// The two baselines take turns going first (the one right after
		// a landing meets the server still busy with it).
		for k := range 2 {
			t0 := time.Now()
			if (i+k)%2 == 0 {
				if _, _, err := r.net(ctx, "ls-remote", "", nil, "ls-remote", remoteArg, target); err != nil {
					b.Fatal(err)
				}
				rtt += time.Since(t0)
			} else {
				if _, err := repo.Run(ctx, "ls-remote", "origin", target); err != nil {
					b.Fatal(err)
				}
				gitRtt += time.Since(t0)
			}
		}
		t1 := time.Now()
		v, err := r.Local(ctx, target, "plan.md")
		if err != nil {
			b.Fatal(err)
		}
		story := fmt.Sprintf("US-%d", i)
		h, err := r.Claim(ctx, story, v)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := h.Land(ctx, LandSpec{Target: target, Branch: branches[i], PlanRel: "plan.md", Subject: "Merge " + story}); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		claim += t2.Sub(t1)
		land += t3.Sub(t2)
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(claim), "claim-ms/story")
	b.ReportMetric(ms(land), "land-ms/story")
	b.ReportMetric(ms(claim+land), "claim+land-ms/story")
	b.ReportMetric(ms(rtt), "ls-remote-ms")
	b.ReportMetric(ms(gitRtt), "git-ls-remote-ms")
	b.ReportMetric((ms(claim)+ms(land))/ms(rtt), "x-ls-remote")
}
