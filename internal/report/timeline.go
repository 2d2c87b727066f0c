package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/report/svg"
)

// Colours of the timeline, shared with the page's legend and table.
const (
	colDone      = "#2f9e5b"
	colFailed    = "#d64541"
	colLimit     = "#e8a33d"
	colStopped   = "#8c939d"
	colRunning   = "#3d7bd9"
	colRollback  = "#7b4fc9"
	colMerge     = "#0e8a8c"
	colDenial    = "#ef7d22"
	colGrid      = "#e3e6ea"
	colAxis      = "#59606b"
	colLaneLabel = "#2b3038"
)

// Timeline geometry, in SVG user units (pixels at 1:1).
const (
	tlWidth   = 1240.0
	tlLeft    = 96.0 // lane labels
	tlRight   = 24.0
	tlTop     = 34.0 // time axis
	tlLaneH   = 40.0
	tlBarH    = 24.0
	tlLegendH = 46.0
)

// outcomeColour is an attempt's bar colour.
func outcomeColour(outcome string) string {
	switch {
	case outcome == "done":
		return colDone
	case strings.HasPrefix(outcome, "failed"):
		return colFailed
	case outcome == "usage limit":
		return colLimit
	case outcome == StoryRunning:
		return colRunning
	}
	return colStopped // interrupted, unfinished
}

// Timeline draws the run as a Gantt chart: one lane per worker, a bar per
// attempt coloured by its outcome (failed ones crossed), rollbacks, merges,
// conflicts and guard denials as markers, usage-limit waits as bands.
func Timeline(r *Report) string {
	start, end := r.Span()
	span := end.Sub(start).Seconds()
	lanes := laneList(r)
	plotW := tlWidth - tlLeft - tlRight
	height := tlTop + float64(len(lanes))*tlLaneH + 14 + tlLegendH
	x := func(t time.Time) float64 {
		f := t.Sub(start).Seconds() / span
		return tlLeft + min(max(f, 0), 1)*plotW
	}
	laneY := func(w int) float64 {
		return tlTop + float64(slices.Index(lanes, w))*tlLaneH
	}
	d := svg.New(tlWidth, height, svg.A("role", "img", "aria-label", "Timeline of the run: attempts per worker over time", "font-family", "system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", "font-size", "12")...)
	d.Group("defs")
	d.Group("pattern", svg.A("id", "hatch", "width", "8", "height", "8", "patternUnits", "userSpaceOnUse", "patternTransform", "rotate(45)")...)
	d.Rect(0, 0, 4, 8, "", svg.A("fill", colLimit, "fill-opacity", "0.35")...)
	d.End()
	d.End()

	// Lanes and their labels.
	plotBottom := tlTop + float64(len(lanes))*tlLaneH
	for i, w := range lanes {
		y := laneY(w)
		if i%2 == 0 {
			d.Rect(tlLeft, y, plotW, tlLaneH, "", svg.A("fill", "#f6f7f9")...)
		}
		label := "loop"
		if w > 0 {
			label = fmt.Sprintf("worker %d", w)
		}
		d.Text(tlLeft-10, y+tlLaneH/2+4, label, svg.A("text-anchor", "end", "fill", colLaneLabel, "font-weight", "600")...)
	}

	// Time axis with gridlines.
	step := tickStep(span)
	first := start.Truncate(step)
	if first.Before(start) {
		first = first.Add(step)
	}
	layout := "15:04"
	if step < time.Minute {
		layout = "15:04:05"
	}
	for t := first; !t.After(end); t = t.Add(step) {
		tx := x(t)
		d.Line(tx, tlTop-4, tx, plotBottom, svg.A("stroke", colGrid, "stroke-width", "1")...)
		d.Text(tx, tlTop-10, t.UTC().Format(layout), svg.A("text-anchor", "middle", "fill", colAxis)...)
	}
	d.Text(tlLeft-30, tlTop-10, "UTC", svg.A("text-anchor", "end", "fill", colAxis, "font-weight", "600")...)
	d.Line(tlLeft, plotBottom, tlLeft+plotW, plotBottom, svg.A("stroke", "#c4c9d0")...)

	// Usage-limit waits span every lane.
	for _, w := range r.Waits {
		wEnd := w.End
		if wEnd.IsZero() {
			wEnd = end
		}
		tip := "usage-limit wait from " + w.Start.UTC().Format("15:04:05") + ", " + Dur(wEnd.Sub(w.Start).Seconds())
		if w.Message != "" {
			tip += ": " + w.Message
		}
		d.Rect(x(w.Start), tlTop, max(x(wEnd)-x(w.Start), 2), plotBottom-tlTop, tip, svg.A("fill", "url(#hatch)", "stroke", colLimit, "stroke-opacity", "0.6")...)
	}

	// Attempts.
	for _, s := range r.Stories {
		for _, a := range s.Attempts {
			aEnd := a.End
			if aEnd.IsZero() {
				aEnd = end
			}
			x0, x1 := x(a.Start), x(aEnd)
			w := max(x1-x0, 3)
			y := laneY(a.Worker) + (tlLaneH-tlBarH)/2
			tip := fmt.Sprintf("%s: %s\nattempt %d (iteration %d) · %s · %s", s.ID, s.Title, a.Number, a.Iteration, a.Outcome, Dur(aEnd.Sub(a.Start).Seconds()))
			if a.CostUSD > 0 || a.InputTokens > 0 {
				tip += fmt.Sprintf(" · %s · %s tokens", Cost(a.CostUSD), Tokens(a.InputTokens+a.OutputTokens))
			}
			if a.Backup != "" {
				tip += "\nrolled back; saved in " + a.Backup
			}
			attrs := svg.A("fill", outcomeColour(a.Outcome), "rx", "4")
			if a.Outcome == StoryRunning {
				attrs = append(attrs, svg.A("stroke", "#1d4f9c", "stroke-dasharray", "4 3", "fill-opacity", "0.75")...)
			}
			d.Rect(x0, y, w, tlBarH, tip, attrs...)
			label := s.ID
			if a.Number > 1 {
				label += fmt.Sprintf(" #%d", a.Number)
			}
			failed := strings.HasPrefix(a.Outcome, "failed")
			if failed {
				label = "✕ " + label
			}
			if fit := fitLabel(label, w-10); fit != "" {
				d.Text(x0+6, y+tlBarH/2+4, fit, svg.A("fill", "#ffffff", "font-weight", "600", "pointer-events", "none")...)
			} else if failed && w >= 9 {
				d.Text(x0+w/2, y+tlBarH/2+4, "✕", svg.A("fill", "#ffffff", "text-anchor", "middle", "font-weight", "700", "pointer-events", "none")...)
			}
			if a.Backup != "" {
				// A rollback: a downward triangle at the attempt's end.
				bx, by := x0+w, y-2
				d.Polygon([]float64{bx - 6, by - 7, bx + 6, by - 7, bx, by + 1}, "rolled back: "+a.Backup, svg.A("fill", colRollback)...)
			}
		}
		lane, ok := lastLane(s)
		if !ok {
			continue
		}
		cy := laneY(lane) + tlLaneH/2
		if !s.Merged.IsZero() {
			mx := x(s.Merged)
			d.Polygon(diamond(mx, cy, 7), s.ID+" merged at "+s.Merged.UTC().Format("15:04:05"), svg.A("fill", colMerge, "stroke", "#ffffff", "stroke-width", "1.5")...)
		}
		if !s.conflictAt.IsZero() {
			mx := x(s.conflictAt)
			d.Polygon(diamond(mx, cy, 8), s.ID+" could not merge; branch "+s.conflictBranch+" kept", svg.A("fill", "#ffffff", "stroke", colFailed, "stroke-width", "2.5")...)
		}
	}

	// Guard denials: a small flag at the top of the lane of the attempt they
	// interrupted.
	for _, dn := range r.Denials {
		if dn.Time.IsZero() {
			continue
		}
		lane := lanes[0]
		if a := attemptAt(r, dn.Story, dn.Time); a != nil {
			lane = a.Worker
		}
		dx, dy := x(dn.Time), laneY(lane)+3
		d.Polygon([]float64{dx - 5, dy, dx + 5, dy, dx, dy + 8}, "guard "+dn.Decision+": "+dn.Command+"\n"+dn.Reason, svg.A("fill", colDenial, "stroke", "#ffffff", "stroke-width", "1")...)
	}

	if r.Outcome == RunRunning {
		nx := x(end)
		d.Line(nx, tlTop-4, nx, plotBottom, svg.A("stroke", colRunning, "stroke-width", "2", "stroke-dasharray", "3 3")...)
		d.Text(nx, plotBottom+13, "now", svg.A("text-anchor", "middle", "fill", colRunning, "font-weight", "600")...)
	}
	legend(d, plotBottom+22)
	return d.String()
}

// legend explains the colours and markers, in one row under the plot.
func legend(d *svg.Doc, y float64) {
	lx := tlLeft
	item := func(label string, draw func(x float64)) {
		w := 20 + float64(len([]rune(label)))*6.3 + 18
		if lx+w > tlWidth-tlRight {
			lx, y = tlLeft, y+22
		}
		draw(lx)
		d.Text(lx+20, y+11, label, svg.A("fill", colLaneLabel)...)
		lx += w
	}
	box := func(fill string, extra ...svg.Attr) func(float64) {
		return func(x float64) { d.Rect(x, y, 14, 14, "", append(svg.A("fill", fill, "rx", "3"), extra...)...) }
	}
	item("done", box(colDone))
	item("failed ✕", box(colFailed))
	item("usage limit", box(colLimit))
	item("interrupted / unfinished", box(colStopped))
	item("running", box(colRunning, svg.A("stroke", "#1d4f9c", "stroke-dasharray", "3 2")...))
	item("rolled back (saved)", func(x float64) {
		d.Polygon([]float64{x + 1, y + 3, x + 13, y + 3, x + 7, y + 11}, "", svg.A("fill", colRollback)...)
	})
	item("merged", func(x float64) { d.Polygon(diamond(x+7, y+7, 7), "", svg.A("fill", colMerge)...) })
	item("merge conflict", func(x float64) {
		d.Polygon(diamond(x+7, y+7, 6), "", svg.A("fill", "#ffffff", "stroke", colFailed, "stroke-width", "2.5")...)
	})
	item("guard denial", func(x float64) {
		d.Polygon([]float64{x + 2, y + 3, x + 12, y + 3, x + 7, y + 11}, "", svg.A("fill", colDenial)...)
	})
	item("limit wait", box("url(#hatch)", svg.A("stroke", colLimit)...))
}

func diamond(cx, cy, r float64) []float64 {
	return []float64{cx, cy - r, cx + r, cy, cx, cy + r, cx - r, cy}
}

// fitLabel returns label, or a shortened one, if it fits in width; "" when
// nothing useful fits. Characters are taken as 7 units wide (12px bold).
func fitLabel(label string, width float64) string {
	runes := []rune(label)
	n := int(width / 7.2)
	switch {
	case n >= len(runes):
		return label
	case n < 4:
		return ""
	}
	return string(runes[:n-1]) + "…"
}

// laneList is the lanes to draw: the workers that ran attempts (and every
// worker of a parallel run), in order.
func laneList(r *Report) []int {
	var lanes []int
	if r.Workers > 1 {
		for w := 1; w <= min(r.Workers, events.MaxWorkers); w++ {
			lanes = append(lanes, w)
		}
	}
	for _, s := range r.Stories {
		for _, a := range s.Attempts {
			if !slices.Contains(lanes, a.Worker) {
				lanes = append(lanes, a.Worker)
			}
		}
	}
	if len(lanes) == 0 {
		lanes = []int{0}
	}
	slices.Sort(lanes)
	return lanes
}

func lastLane(s *Story) (int, bool) {
	if len(s.Attempts) == 0 {
		return 0, false
	}
	return s.Attempts[len(s.Attempts)-1].Worker, true
}

// attemptAt is story's attempt running at t, if any.
func attemptAt(r *Report, story string, t time.Time) *Attempt {
	for _, s := range r.Stories {
		if s.ID != story {
			continue
		}
		for _, a := range s.Attempts {
			if !t.Before(a.Start) && (a.End.IsZero() || !t.After(a.End)) {
				return a
			}
		}
	}
	return nil
}

// tickStep picks a round step giving at most about ten ticks over span.
func tickStep(span float64) time.Duration {
	for _, s := range []int{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400} {
		if span/float64(s) <= 10 {
			return time.Duration(s) * time.Second
		}
	}
	return time.Duration(span/10) * time.Second
}
