package svg

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// Hostile text and attribute values come out as well-formed XML that
// reads back exactly (control characters XML cannot hold become U+FFFD).
func TestEscapedAndWellFormed(t *testing.T) {
	hostile := "</text><script>alert('x')</script>\" onload=\"x()\" & \x1b[31m\x00\xff"
	d := New(100.5, 50)
	d.Group("g", A("class", hostile)...)
	d.Rect(1, 2, -3, 4.456, hostile, A("fill", hostile)...)
	d.Text(5, 6, hostile)
	d.Polygon([]float64{0, 0, 1.006, 2, 3, 4}, "")
	d.Line(0, 0, 10, 10)
	out := d.String()
	if strings.Contains(out, "<script") || strings.Contains(out, `" onload="`) {
		t.Fatalf("markup escaped the escaping:\n%s", out)
	}
	dec := xml.NewDecoder(strings.NewReader(out))
	dec.Strict = true
	want := strings.NewReplacer("\x1b", "\uFFFD", "\x00", "\uFFFD", "\xff", "\uFFFD").Replace(hostile)
	var texts []string
	var attrs []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%v in\n%s", err, out)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			for _, a := range e.Attr {
				if a.Name.Local == "class" || a.Name.Local == "fill" {
					attrs = append(attrs, a.Value)
				}
				if a.Name.Local == "width" && e.Name.Local == "rect" && a.Value != "0" {
					t.Errorf("negative width drawn as %q", a.Value)
				}
			}
		case xml.CharData:
			texts = append(texts, string(e))
		}
	}
	if len(attrs) != 2 || attrs[0] != want || attrs[1] != want {
		t.Errorf("attributes read back as %q, want %q", attrs, want)
	}
	if len(texts) != 2 || texts[0] != want || texts[1] != want {
		t.Errorf("texts read back as %q", texts)
	}
	if !strings.Contains(out, `viewBox="0 0 100.5 50"`) || !strings.Contains(out, `height="4.46"`) || !strings.Contains(out, `points="0,0 1.01,2 3,4"`) {
		t.Errorf("numbers: %s", out)
	}
}

func TestNum(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 1.5: "1.5", -2.345: "-2.35", 1240: "1240", 0.004: "0"} {
		if got := Num(f); got != want {
			t.Errorf("Num(%v) = %q, want %q", f, got, want)
		}
	}
}
