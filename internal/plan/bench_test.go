package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkPRDJSONIteration measures what a loop's iteration asks of a
// prd.json plan of 10,000 stories (the stories a few times, the next open
// one, a tick) against the same for the markdown plan of the same stories,
// in the same run, and reports the ratio: the README promises the loop's
// own work flat from 100 to 10,000 stories for both.
func BenchmarkPRDJSONIteration(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	var us []map[string]any
	var md strings.Builder
	for i := 1; i <= n; i++ {
		us = append(us, map[string]any{"id": fmt.Sprintf("US-%d", i), "title": fmt.Sprintf("story %d", i), "description": strings.Repeat("d", 200), "priority": i, "passes": false})
		fmt.Fprintf(&md, "- [ ] US-%d: story %d\n", i, i)
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&md, "\n### US-%d\n%s\n", i, strings.Repeat("d", 200))
	}
	data, err := json.MarshalIndent(map[string]any{"branchName": "main", "userStories": us}, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	pj, mdPath := filepath.Join(dir, "prd.json"), filepath.Join(dir, "plan.md")
	if err := os.WriteFile(pj, data, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(mdPath, []byte(md.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	iterate := func(p Plan) time.Duration {
		start := time.Now()
		for range 3 {
			if _, err := p.Stories(); err != nil {
				b.Fatal(err)
			}
		}
		s, _, err := NextOpen(p, nil)
		if err != nil || s == nil {
			b.Fatalf("next: %v, %v", s, err)
		}
		if err := p.MarkDone(s.ID); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	prd, mdp := &PRDJSON{File: pj}, &Markdown{File: mdPath}
	// The first read of each is the run's start, not an iteration.
	iterate(prd)
	iterate(mdp)
	b.ResetTimer()
	var prdTook, mdTook time.Duration
	for i := 0; i < b.N && i < n-1; i++ {
		prdTook += iterate(prd)
		mdTook += iterate(mdp)
	}
	b.ReportMetric(float64(prdTook.Microseconds())/float64(b.N)/1000, "prd-ms/iteration")
	b.ReportMetric(float64(mdTook.Microseconds())/float64(b.N)/1000, "md-ms/iteration")
	b.ReportMetric(float64(prdTook)/float64(max(mdTook, 1)), "x-markdown")
}

// BenchmarkMarkdownParse measures a whole parse of a markdown plan of
// 10,000 stories, each with criteria nested under its line and a ###
// block: what a run's start, and a loop's iteration after an agent edited
// the plan, pay. It grows with the plan's lines, not faster.
func BenchmarkMarkdownParse(b *testing.B) {
	const n = 10000
	var md strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&md, "- [ ] US-%d: story %d\n  - [ ] criterion one of %d\n  - [ ] criterion two\n    with a second line\n\n", i, i, i)
	}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&md, "\n### US-%d\n%s\n- [ ] a criterion in the block\n", i, strings.Repeat("d", 200))
	}
	lines := strings.SplitAfter(md.String(), "\n")
	b.ResetTimer()
	for range b.N {
		if stories, _ := parseMarkdown(lines); len(stories) != n {
			b.Fatalf("%d stories, want %d", len(stories), n)
		}
	}
}
