package guard

import (
	"fmt"
	"os"
	"path/filepath"
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

// BenchmarkCheckScript is the cost of judging a script run by path (read
// from disk with os.ReadFile, as the hooks do) against checking the same
// text given inline, measured in the same loop: x-inline is the first
// over the second, the price of the file read.
func BenchmarkCheckScript(b *testing.B) {
	dir := b.TempDir()
	var text strings.Builder
	text.WriteString("#!/bin/sh\nset -e\n")
	for i := range 40 {
		fmt.Fprintf(&text, "go build -o bin/tool%d ./cmd/tool%d && echo \"built tool%d, never git push\"\n", i, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "build.sh"), []byte(text.String()), 0o755); err != nil {
		b.Fatal(err)
	}
	p := testPolicy("main")
	p.Cwd, p.Root = dir, dir
	p.ReadFile = os.ReadFile
	var inline, script time.Duration
	for b.Loop() {
		t0 := time.Now()
		if d := Check(text.String(), p); d.Action != Allow {
			b.Fatal(d)
		}
		t1 := time.Now()
		if d := Check("sh build.sh", p); d.Action != Allow {
			b.Fatal(d)
		}
		script += time.Since(t1)
		inline += t1.Sub(t0)
	}
	b.ReportMetric(float64(script.Nanoseconds())/float64(b.N), "script-ns/op")
	b.ReportMetric(float64(inline.Nanoseconds())/float64(b.N), "inline-ns/op")
	b.ReportMetric(float64(script)/float64(inline), "x-inline")
}
