package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// What an agent's output or a plan can hold, and what a terminal is then
// given: no escape sequence, no control character, the text still there.
func TestClean(t *testing.T) {
	for _, c := range []struct{ in, one, lines string }{
		{"plain text, ünïcode 已完成 ✅", "plain text, ünïcode 已完成 ✅", "plain text, ünïcode 已完成 ✅"},
		{"\x1b]0;PWNED-TITLE\x07 title", " title", " title"},
		{"\x1b]52;c;cHduZWQ=\x07clip", "clip", "clip"},
		{"\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\", "link", "link"},
		{"\x1b[2J\x1b[31mred\x1b[0m \x1b[?1049h", "red ", "red "},
		{"\x1bPq#0;2;0;0;0\x1b\\dcs", "dcs", "dcs"},
		{"\x1b_apc\x1b\\\x1b^pm\x07\x1bXsos\x1b\\x", "x", "x"},
		{"\x1b(Bcharset \x1b7saved\x1b8 \x1bcreset", "charset saved reset", "charset saved reset"},
		{"\u009b2J\u009d0;T\u009c\u0090dcs\u009cc1", "c1", "c1"},
		{"\u0085nel \u0080x", "�nel �x", "�nel �x"},
		{"a\tb\nc\rd\x00e\x7ff\x08", "a b c�d�e�f�", "a\tb\nc�d�e�f�"},
		{"\x1b]0;never ended", "", ""},
		{"lone \x1b", "lone �", "lone �"},
		{"\u202eevil\u2028x", "�evil�x", "�evil�x"},
		{"bad \xff\xfe utf8", "bad �� utf8", "bad �� utf8"},
	} {
		if got := Clean(c.in); got != c.one {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.one)
		}
		if got := Lines(c.in); got != c.lines {
			t.Errorf("Lines(%q) = %q, want %q", c.in, got, c.lines)
		}
	}
}

func TestNothingInterpretable(t *testing.T) {
	hostile := "\x1b]0;T\x07\x1b]52;c;eA==\x1b\\\u009b31m\x1b[2J\u009d8;;u\u009c\r\x1b\x1b["
	for _, s := range []string{Clean(hostile), Lines(hostile)} {
		if strings.ContainsAny(s, "\x1b\x07\r\u009b\u009c\u009d") {
			t.Errorf("%q holds a control character", s)
		}
	}
}

// Terminal cells, not runes or bytes: CJK and emoji take two.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		in    string
		n     int
		want  string
		width int
	}{
		{"hello", 10, "hello", 5},
		{"hello world", 6, "hello…", 11},
		{"已完成：添加了报告测试", 9, "已完成：…", 22},
		{"✅ done ✅", 4, "✅ …", 10},
		{"ab", 0, "", 2},
	} {
		got := Clip(c.in, c.n)
		if got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if Width(got) > c.n {
			t.Errorf("Clip(%q, %d) = %q takes %d cells", c.in, c.n, got, Width(got))
		}
		if w := Width(c.in); w != c.width {
			t.Errorf("Width(%q) = %d, want %d", c.in, w, c.width)
		}
	}
}

func TestRewritten(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                         "plain",
		"10%\r50%\r100%":                "100%",
		"crlf\r":                        "crlf",
		"a\rb\r\r":                      "b",
		"\r":                            "",
		"tab\tand \x1b[1mbold\r\x1b[Kx": "\x1b[Kx",
	} {
		if got := Rewritten(in); got != want {
			t.Errorf("Rewritten(%q) = %q, want %q", in, got, want)
		}
	}
}

// A title is one clean line of at most TitleWidth cells: cut by cells
// (a CJK character takes two), never inside a rune, ending with … when
// cut; a short one is as it was.
func TestTitle(t *testing.T) {
	if got := Title("fix Add"); got != "fix Add" {
		t.Errorf("Title(short) = %q", got)
	}
	long := strings.Repeat("报告 and\tmore ", 500)
	got := Title(long)
	if w := Width(got); w > TitleWidth || w < TitleWidth-1 {
		t.Errorf("Title(long) takes %d cells, want %d", w, TitleWidth)
	}
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || strings.ContainsAny(got, "\t\n") {
		t.Errorf("Title(long) = %q", got)
	}
	if got := Title("\x1b]0;T\x07" + strings.Repeat("x", 100)); strings.ContainsRune(got, 0x1b) || Width(got) != TitleWidth {
		t.Errorf("Title(escapes) = %q", got)
	}
}
