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
// 127.0.0.1, without the agent, as a machine alone does it in steady
// state: land on the tip it last saw (merge-tree, tick) with the claim on
// the next story riding along (its view, its commit), in one atomic push.
// It reports the two parts per story; the baselines in the same run are
// one push of a new claim-like commit as wiggum makes it (push-ms), and
// one `git ls-remote` round trip to the same server as wiggum makes it
// (protocol v0, ls-remote-ms) and as git does by default (protocol v2,
// git-ls-remote-ms).
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
	n := b.N + 2
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
	// The first story's claim is a push of its own, before the clock.
	v, err = r.Local(ctx, target, "plan.md")
	if err != nil {
		b.Fatal(err)
	}
	h, err := r.Claim(ctx, "US-1", v)
	if err != nil {
		b.Fatal(err)
	}
	var claim, land, rtt, gitRtt, push time.Duration
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		// The baselines take turns going first (the one right after a
		// landing meets the server still busy with it).
		for k := range 3 {
			t0 := time.Now()
			switch (i + k) % 3 {
			case 0:
				if _, _, err := r.net(ctx, "ls-remote", "", nil, "ls-remote", remoteArg, target); err != nil {
					b.Fatal(err)
				}
				rtt += time.Since(t0)
			case 1:
				if _, err := repo.Run(ctx, "ls-remote", "origin", target); err != nil {
					b.Fatal(err)
				}
				gitRtt += time.Since(t0)
			default:
				// One push as wiggum makes it: a new claim-like commit
				// to a ref that must not exist.
				c := Claim{Story: "floor", Time: time.Now(), LeaseMS: 1}
				sha, err := r.claimCommit(ctx, &c)
				if err != nil {
					b.Fatal(err)
				}
				t0 = time.Now()
				if bad, err := r.push(ctx, "floor", []update{{src: sha, dst: fmt.Sprintf("refs/wiggum/floor/%d", i), expect: ""}}); err != nil || len(bad) > 0 {
					b.Fatal(err, bad)
				}
				push += time.Since(t0)
			}
		}
		// Land story i; the claim on story i+1 rides along in the same
		// push, as a machine's claim ahead does in steady state. The
		// claim's part is its view and its commit.
		story := fmt.Sprintf("US-%d", i)
		p := &benchRider{r: r, story: fmt.Sprintf("US-%d", i+1)}
		t1 := time.Now()
		m := &Member{H: h, Spec: LandSpec{Target: target, Branch: branches[i], PlanRel: "plan.md", Subject: "Merge " + story}}
		r.landGroup(ctx, []*Member{m}, nil, p)
		if m.Err != nil || !p.made {
			b.Fatal(m.Err, p.made)
		}
		took := time.Since(t1)
		claim += p.spent
		land += took - p.spent
		h = p.h
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(claim), "claim-ms/story")
	b.ReportMetric(ms(land), "land-ms/story")
	b.ReportMetric(ms(claim+land), "claim+land-ms/story")
	b.ReportMetric(ms(rtt), "ls-remote-ms")
	b.ReportMetric(ms(gitRtt), "git-ls-remote-ms")
	b.ReportMetric(ms(push), "push-ms")
	b.ReportMetric((ms(claim)+ms(land))/ms(push), "x-push")
}

// benchRider claims story in the landing's push.
type benchRider struct {
	r     *Remote
	story string
	h     *Held
	made  bool
	spent time.Duration
}

func (p *benchRider) board(ctx context.Context, base string, _ []string) *Held {
	t0 := time.Now()
	defer func() { p.spent += time.Since(t0) }()
	v, err := p.r.Local(ctx, target, "plan.md")
	if err != nil || v.Tip != base {
		return nil
	}
	h, err := p.r.newClaim(ctx, p.story, p.story, v)
	if err != nil {
		return nil
	}
	p.h = h
	return h
}

func (p *benchRider) off(h *Held, made bool, tip string, taken bool, err error) { p.made = made }
