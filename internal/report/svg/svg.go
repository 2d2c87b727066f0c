// Package svg writes small SVG drawings - rectangles, lines, polygons and
// text with tooltips - as well-formed XML in which every text and attribute
// value is escaped, so hostile strings can only ever be shown, never run.
package svg

import (
	"fmt"
	"strconv"
	"strings"
)

// Doc is a drawing being written.
type Doc struct {
	b    strings.Builder
	open []string // elements opened with Group, innermost last
}

// Attr is one attribute; a drawing's output is in the order given.
type Attr struct{ Name, Value string }

// A is shorthand for a list of attributes from name, value pairs.
func A(pairs ...string) []Attr {
	if len(pairs)%2 != 0 {
		panic("svg.A: odd number of arguments")
	}
	out := make([]Attr, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Attr{pairs[i], pairs[i+1]})
	}
	return out
}

// New starts a drawing of w x h user units that scales to its container.
func New(w, h float64, attrs ...Attr) *Doc {
	d := &Doc{}
	d.b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg"`)
	d.attrs(append([]Attr{{"viewBox", "0 0 " + Num(w) + " " + Num(h)}, {"width", Num(w)}, {"height", Num(h)}}, attrs...))
	d.b.WriteString(">")
	return d
}

// Num formats a coordinate: at most two decimals, no trailing zeros.
func Num(f float64) string {
	return strconv.FormatFloat(float64(int64(f*100+sign(f)*0.5))/100, 'f', -1, 64)
}

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

func (d *Doc) attrs(as []Attr) {
	for _, a := range as {
		d.b.WriteString(" " + a.Name + `="` + Escape(a.Value) + `"`)
	}
}

// element writes <name attrs>tip</name>, or <name attrs/> without a tip.
func (d *Doc) element(name string, as []Attr, tip string) {
	d.b.WriteString("<" + name)
	d.attrs(as)
	if tip == "" {
		d.b.WriteString("/>")
		return
	}
	d.b.WriteString("><title>" + Escape(tip) + "</title></" + name + ">")
}

// Rect draws a rectangle; tip, when not empty, is its tooltip.
func (d *Doc) Rect(x, y, w, h float64, tip string, as ...Attr) {
	d.element("rect", append([]Attr{{"x", Num(x)}, {"y", Num(y)}, {"width", Num(max(w, 0))}, {"height", Num(max(h, 0))}}, as...), tip)
}

// Line draws a line.
func (d *Doc) Line(x1, y1, x2, y2 float64, as ...Attr) {
	d.element("line", append([]Attr{{"x1", Num(x1)}, {"y1", Num(y1)}, {"x2", Num(x2)}, {"y2", Num(y2)}}, as...), "")
}

// Polygon draws a closed shape through the points x0, y0, x1, y1, ...
func (d *Doc) Polygon(xy []float64, tip string, as ...Attr) {
	var pts []string
	for i := 0; i+1 < len(xy); i += 2 {
		pts = append(pts, Num(xy[i])+","+Num(xy[i+1]))
	}
	d.element("polygon", append([]Attr{{"points", strings.Join(pts, " ")}}, as...), tip)
}

// Text writes s at x, y (the baseline).
func (d *Doc) Text(x, y float64, s string, as ...Attr) {
	d.b.WriteString("<text")
	d.attrs(append([]Attr{{"x", Num(x)}, {"y", Num(y)}}, as...))
	d.b.WriteString(">" + Escape(s) + "</text>")
}

// Group opens a <g> (or another container, such as "defs" or "pattern")
// that End closes.
func (d *Doc) Group(name string, as ...Attr) {
	d.b.WriteString("<" + name)
	d.attrs(as)
	d.b.WriteString(">")
	d.open = append(d.open, name)
}

// End closes the innermost Group.
func (d *Doc) End() {
	n := len(d.open) - 1
	d.b.WriteString("</" + d.open[n] + ">")
	d.open = d.open[:n]
}

// String closes every open group and the drawing, and returns it.
func (d *Doc) String() string {
	for len(d.open) > 0 {
		d.End()
	}
	return d.b.String() + "</svg>"
}

// Escape makes s safe as XML text or a quoted attribute value. Characters
// XML 1.0 cannot hold at all (most control characters) become U+FFFD.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&#34;")
		case r == '\'':
			b.WriteString("&#39;")
		case r == '\t' || r == '\n' || r == '\r':
			fmt.Fprintf(&b, "&#%d;", r)
		case r < 0x20 || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF) || r == 0x7f:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
