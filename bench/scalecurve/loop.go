package main

import (
	"bufio"
	"fmt"
	"html"
	"math"
	"os"
	"strconv"
	"strings"
)

// loopPoint is one row of bench/loop.sh's curve: a plan size and the
// per-iteration times (ms) of the floor and of wiggum.
type loopPoint struct {
	stories                               string
	floor, wiggum, over, fCPU, wCPU, oCPU float64
	// Without wiggum's once-per-run start-up (absent in older results).
	steady, steadyCPU float64
	hasSteady         bool
}

// plotLoop draws bench/loop.sh's curve: per-iteration wall time of the raw
// git floor and of wiggum against the plan's size, and wiggum's overhead
// (wiggum minus the floor, in the same round) in wall and CPU time - the
// line that must stay flat while the floor grows with the plan.
func plotLoop(results, out string) error {
	f, err := os.Open(results)
	if err != nil {
		return err
	}
	defer f.Close()
	var pts []loopPoint
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Split(sc.Text(), "\t")
		if len(fl) < 7 || fl[0] == "stories" {
			continue
		}
		p := loopPoint{stories: fl[0]}
		for i, v := range []*float64{&p.floor, &p.wiggum, &p.over, &p.fCPU, &p.wCPU, &p.oCPU} {
			if *v, err = strconv.ParseFloat(fl[i+1], 64); err != nil {
				return fmt.Errorf("%s: %q is not a number", results, fl[i+1])
			}
		}
		if len(fl) >= 10 {
			p.steady, _ = strconv.ParseFloat(fl[8], 64)
			p.steadyCPU, _ = strconv.ParseFloat(fl[9], 64)
			p.hasSteady = true
		}
		pts = append(pts, p)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(pts) == 0 {
		return fmt.Errorf("%s holds no results", results)
	}
	lo, hi := 0.0, 1.0
	for _, p := range pts {
		for _, v := range []float64{p.floor, p.wiggum, p.over, p.oCPU, p.steady, p.steadyCPU} {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	step := math.Pow(10, math.Floor(math.Log10(hi-lo)))
	if (hi-lo)/step < 4 {
		step /= 2
	}
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	const w, h, left, top, plotH = 640, 340, 60, 40, 240
	plotW := float64(w - left - 70)
	x := func(i int) float64 {
		if len(pts) == 1 {
			return float64(left) + plotW/2
		}
		return float64(left) + plotW*float64(i)/float64(len(pts)-1)
	}
	y := func(v float64) float64 { return float64(top) + plotH - plotH*(v-lo)/(hi-lo) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">wiggum run: ms per committing iteration by plan size (stories with details)</text>`+"\n", left)
	for v := lo; v <= hi+step/2; v += step {
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%g</text>`+"\n", left-6, y(v)+4, math.Round(v*100)/100)
		color := "#ddd"
		if v == 0 {
			color = "#888"
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>`+"\n", left, y(v), w-70, y(v), color)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, top, left, top+plotH)
	for i, p := range pts {
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%s</text>`+"\n", x(i), top+plotH+16, html.EscapeString(p.stories))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">stories in the plan</text>`+"\n", left+int(plotW/2), top+plotH+34)
	type curve struct {
		color, name string
		v           func(loopPoint) float64
	}
	curves := []curve{
		{"#7f7f7f", "raw git floor, wall", func(p loopPoint) float64 { return p.floor }},
		{"#1f77b4", "wiggum, wall", func(p loopPoint) float64 { return p.wiggum }},
		{"#d62728", "overhead (wiggum - floor), wall", func(p loopPoint) float64 { return p.over }},
		{"#ff7f0e", "overhead, CPU", func(p loopPoint) float64 { return p.oCPU }},
	}
	if pts[0].hasSteady {
		curves = append(curves, curve{"#2ca02c", "overhead without start-up, CPU", func(p loopPoint) float64 { return p.steadyCPU }})
	}
	for ci, c := range curves {
		var path []string
		for i, p := range pts {
			v := c.v(p)
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/><text x="%.1f" y="%.1f" fill="%s">%.2f</text>`+"\n",
				x(i), y(v), c.color, x(i)+5, y(v)-5, c.color, v)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c.color, strings.Join(path, " "))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", left+10, top+14+14*ci, c.color, c.name)
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
