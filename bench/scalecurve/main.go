// Command scalecurve supports bench/scale.sh: it writes the repositories
// the scale benchmark runs on and plots its results as SVG curves.
//
//	scalecurve gen DIR N        write N small files under DIR (100 per directory)
//	scalecurve plot RESULTS OUT plot RESULTS (bench/scale.sh's TSV) into OUT.svg
//	scalecurve loop RESULTS OUT plot bench/loop.sh's plan-size curve into OUT.svg
package main

import (
	"bufio"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: scalecurve gen DIR N | scalecurve plot RESULTS.tsv OUT.svg | scalecurve loop RESULTS.tsv OUT.svg")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2], os.Args[3])
	case "plot":
		err = plot(os.Args[2], os.Args[3])
	case "loop":
		err = plotLoop(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalecurve:", err)
		os.Exit(1)
	}
}

// gen writes n files of a few lines each, 100 to a directory, as a source
// tree of that size would have them.
func gen(dir, count string) error {
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 {
		return fmt.Errorf("bad file count %q", count)
	}
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%04d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		body := fmt.Sprintf("// file %d\npackage p%d\n\nfunc F%d() int { return %d }\n", i, i/100, i, i*7)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d.go", i%100)), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// point is one row of the results: a case, an operation and its times.
type point struct {
	label, op              string
	wiggum, floor, before  float64 // wall ms; before is 0 when no older build was timed
	wigCPU, floorCPU, bCPU float64 // CPU ms of all processes
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// targets are issue 10's ratios to the baseline, per operation.
var targets = map[string]float64{"checkpoint": 1.5, "rollback": 1.5, "hook PostToolUse": 1.3}

// plot draws, per operation (checkpoint, rollback; or the rows of
// bench/scaleio), the ratio to its baseline for each case: one curve for
// this build, one for the older build when it was timed, and the target
// line where issue 10 sets one; the wall-time curve of this build has a
// CPU-time twin, which a busy machine does not inflate.
func plot(results, out string) error {
	f, err := os.Open(results)
	if err != nil {
		return err
	}
	defer f.Close()
	var pts []point
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// case op wiggum_ms floor_ms before_ms wiggum_cpu_ms floor_cpu_ms before_cpu_ms
		fl := strings.Split(sc.Text(), "\t")
		if len(fl) < 8 || fl[0] == "case" {
			continue
		}
		p := point{label: fl[0], op: fl[1]}
		for i, v := range []*float64{&p.wiggum, &p.floor, &p.before, &p.wigCPU, &p.floorCPU, &p.bCPU} {
			*v, _ = strconv.ParseFloat(fl[i+2], 64)
		}
		if p.floor > 0 {
			pts = append(pts, p)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// One panel per operation, in the order the results name them.
	var ops, labels []string
	seen, seenOp := map[string]bool{}, map[string]bool{}
	maxRatio := 2.0
	for _, p := range pts {
		if !seen[p.label] {
			seen[p.label] = true
			labels = append(labels, p.label)
		}
		if !seenOp[p.op] {
			seenOp[p.op] = true
			ops = append(ops, p.op)
		}
		maxRatio = math.Max(maxRatio, math.Max(p.wiggum, p.before)/p.floor)
		if p.floorCPU > 0 {
			maxRatio = math.Max(maxRatio, p.wigCPU/p.floorCPU)
		}
	}
	if len(labels) == 0 {
		return fmt.Errorf("%s holds no results", results)
	}
	// A log scale: an older build's 30x and this build's 1.3x on one plot.
	maxRatio = math.Pow(2, math.Ceil(math.Log2(maxRatio)))
	minRatio := 0.5
	for _, p := range pts {
		for _, r := range []float64{p.wiggum / p.floor, div(p.wigCPU, p.floorCPU)} {
			if r > 0 && r < minRatio {
				minRatio = math.Pow(2, math.Floor(math.Log2(r)))
			}
		}
	}
	const w, left, top, panelH, gap = 640, 60, 40, 220, 60
	height := top + len(ops)*(panelH+gap)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">wiggum / its baseline, same run (log scale, lower is better)</text>`+"\n", left)
	plotW := float64(w - left - 30)
	x := func(i int) float64 {
		if len(labels) == 1 {
			return float64(left) + plotW/2
		}
		return float64(left) + plotW*float64(i)/float64(len(labels)-1)
	}
	for pi, op := range ops {
		y0 := float64(top + pi*(panelH+gap))
		y := func(r float64) float64 {
			r = math.Max(r, minRatio)
			return y0 + panelH - panelH*math.Log(r/minRatio)/math.Log(maxRatio/minRatio)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-6, op)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="black"/>`+"\n", left, y0, left, y0+panelH)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="black"/>`+"\n", left, y0+panelH, w-30, y0+panelH)
		for r := minRatio; r <= maxRatio; r *= 2 {
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%gx</text>`+"\n", left-6, y(r)+4, r)
			fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`+"\n", left, y(r), w-30, y(r))
		}
		if t := targets[op]; t > 0 {
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="green" stroke-dasharray="6 4"/><text x="%d" y="%.1f" fill="green">target %gx</text>`+"\n",
				left, y(t), w-30, y(t), w-110, y(t)-4, t)
		}
		for i, l := range labels {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(i), y0+panelH+16, html.EscapeString(l))
		}
		for ci, curve := range []struct {
			color, name string
			ratio       func(p point) float64 // 0 when not measured
		}{
			{"#1f77b4", "this build, wall", func(p point) float64 { return p.wiggum / p.floor }},
			{"#17becf", "this build, CPU", func(p point) float64 { return div(p.wigCPU, p.floorCPU) }},
			{"#d62728", "before, wall", func(p point) float64 { return p.before / p.floor }},
		} {
			var path []string
			for i, l := range labels {
				for _, p := range pts {
					if r := curve.ratio(p); p.label == l && p.op == op && r > 0 {
						path = append(path, fmt.Sprintf("%.1f,%.1f", x(i), y(r)))
						fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/><text x="%.1f" y="%.1f" fill="%s">%.2fx</text>`+"\n",
							x(i), y(r), curve.color, x(i)+5, y(r)-5, curve.color, r)
					}
				}
			}
			if len(path) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", curve.color, strings.Join(path, " "))
				fmt.Fprintf(&b, `<text x="%d" y="%.0f" fill="%s">%s</text>`+"\n", w-200, y0+14+14*float64(ci), curve.color, curve.name)
			}
		}
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
