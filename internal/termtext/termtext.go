// Package termtext makes text wiggum did not write itself - an agent's
// output, a plan's titles, a log read back - safe to print on a terminal:
// it can only be read, never interpreted (no window title, clipboard,
// hyperlink or screen clear from an escape sequence), and it is measured
// in the cells a terminal gives it, not in bytes or runes.
package termtext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Clean returns s as one line of plain text: escape sequences (CSI, OSC,
// DCS and the other strings, with their payloads) are removed, tabs and
// newlines become spaces, and every other control character is replaced
// by �, as are invalid UTF-8, line and paragraph separators and bidi
// controls.
func Clean(s string) string { return clean(s, false) }

// Lines is Clean for text that may hold several lines: tabs and newlines
// are kept.
func Lines(s string) string { return clean(s, true) }

// Rewritten is what a terminal shows last of one line of a program's
// output that it rewrote in place with carriage returns (a progress line:
// "10%\r50%\r100%"): the text after the last \r, a trailing one (\r\n)
// aside. Clean would show each \r as �.
func Rewritten(line string) string {
	line = strings.TrimRight(line, "\r")
	if i := strings.LastIndexByte(line, '\r'); i >= 0 {
		return line[i+1:]
	}
	return line
}

// Width is how many terminal cells s takes, counted rune by rune as
// terminals do (a CJK character or an emoji takes two). s is text after
// Clean.
func Width(s string) int { return ansi.StringWidthWc(s) }

// Clip cuts s to at most n cells, ending it with … when it is cut.
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	return ansi.TruncateWc(s, n, "…")
}

// TitleWidth is the most cells a story's title takes in a line that
// reports progress or status (wiggum run's "── iteration" line, wiggum
// status, watch --plain): a plan's title may run to thousands of
// characters, which such a line would spill over screens of the terminal.
// Events, the journal, the report and commits keep the title whole.
const TitleWidth = 80

// Title is a story's title for one line of progress or status: Clean,
// then cut to TitleWidth cells, ending with … when it is cut.
func Title(s string) string { return Clip(Clean(s), TitleWidth) }

func clean(s string, lines bool) string {
	if !needsCleaning(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == 0x1b:
			if n := escape(rs[i+1:]); n >= 0 {
				i += n
				continue
			}
			b.WriteRune('�')
		case r == 0x9b: // CSI
			i += csi(rs[i+1:])
		case r == 0x90 || r == 0x98 || r == 0x9d || r == 0x9e || r == 0x9f: // DCS, SOS, OSC, PM, APC
			i += controlString(rs[i+1:])
		case r == '\n' || r == '\t':
			if !lines {
				r = ' '
			}
			b.WriteRune(r)
		case Replaced(r):
			b.WriteRune('�')
		default:
			b.WriteRune(r) // invalid UTF-8 came as utf8.RuneError: written as �
		}
	}
	return b.String()
}

// needsCleaning: most text has nothing to replace, and is returned as it is.
func needsCleaning(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if Replaced(r) {
			return true
		}
	}
	return false
}

// Replaced reports whether Clean shows r as �: a control character (but
// tab and newline, which it keeps or turns into spaces, and the escape
// sequences it removes), a line or paragraph separator, or a bidi control,
// which would make text read in another order than it is.
func Replaced(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r)
}

// escape is how many runes after an ESC belong to its sequence, or -1
// when the ESC starts none (it is then shown as �).
func escape(rs []rune) int {
	if len(rs) == 0 {
		return -1
	}
	switch r := rs[0]; {
	case r == '[':
		return 1 + csi(rs[1:])
	case r == ']' || r == 'P' || r == 'X' || r == '^' || r == '_':
		return 1 + controlString(rs[1:])
	case r >= 0x20 && r <= 0x2f: // intermediates, then a final byte: ESC ( B
		n := 1
		for n < len(rs) && rs[n] >= 0x20 && rs[n] <= 0x2f {
			n++
		}
		if n < len(rs) && rs[n] >= 0x30 && rs[n] <= 0x7e {
			n++
		}
		return n
	case r >= 0x30 && r <= 0x7e: // ESC 7, ESC c, ESC M ...
		return 1
	}
	return -1
}

// csi is how many runes after a CSI introducer belong to it: parameters
// and intermediates up to the final byte. Anything else ends it early.
func csi(rs []rune) int {
	for n, r := range rs {
		switch {
		case r >= 0x20 && r <= 0x3f:
		case r >= 0x40 && r <= 0x7e:
			return n + 1
		default:
			return n
		}
	}
	return len(rs)
}

// controlString is how many runes after an OSC, DCS, SOS, PM or APC
// introducer belong to it: its payload up to BEL or ST (ESC \ or 0x9c),
// or to the end of the text when nothing ends it.
func controlString(rs []rune) int {
	for n, r := range rs {
		switch {
		case r == 0x07 || r == 0x9c:
			return n + 1
		case r == 0x1b && n+1 < len(rs) && rs[n+1] == '\\':
			return n + 2
		}
	}
	return len(rs)
}
