package guard

import (
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// BenchmarkCheck is the in-process cost of Check against its floor,
// parsing the same commands with mvdan.cc/sh alone, measured in the same
// loop: x-parse is Check's time over the parse's.
func BenchmarkCheck(b *testing.B) {
	corpus := append(readCorpus(b, "testdata/corpus.txt"), readCorpus(b, "testdata/data.txt")...)
	var all []string
	for _, c := range corpus {
		all = append(all, c.command)
	}
	sets := map[string][]string{
		"typical": {"cd src && go build ./... && git status"},
		"corpus":  all,
	}
	for name, cmds := range sets {
		b.Run(name, func(b *testing.B) {
			p := testPolicy("main")
			var parse, check time.Duration
			for b.Loop() {
				t0 := time.Now()
				for _, cmd := range cmds {
					_, _ = syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
				}
				t1 := time.Now()
				for _, cmd := range cmds {
					Check(cmd, p)
				}
				check += time.Since(t1)
				parse += t1.Sub(t0)
			}
			n := float64(b.N * len(cmds))
			b.ReportMetric(float64(check.Nanoseconds())/n, "check-ns/cmd")
			b.ReportMetric(float64(parse.Nanoseconds())/n, "parse-ns/cmd")
			b.ReportMetric(float64(check)/float64(parse), "x-parse")
		})
	}
}
