package guard

import "strings"

// The guard's bounds. A command past any of them is asked about, never
// allowed: a hostile or runaway command must not make the hook slow or let
// something through because the guard gave up.
const (
	// MaxCommand is the longest command the guard parses.
	MaxCommand = 256 << 10
	// maxNesting bounds brackets nested in one script: the parser's cost
	// grows with the square of "((((" nesting, about 1.5 ms at this depth.
	maxNesting = 256
	// maxDepth bounds shells nested in shells (bash -c "eval '...'").
	maxDepth = 8
	// maxHops bounds wrappers around wrappers (env timeout nice env ...).
	maxHops = 16
	// maxWords bounds the words brace expansion and xargs-style wrappers
	// may produce in one Check, and maxExpanded their total length.
	maxWords    = 4096
	maxExpanded = 4 << 20
	// maxParsed bounds the source parsed in one Check, nested shells and
	// interpreter code included.
	maxParsed = 4 * MaxCommand
)

// budget is what one Check may still spend.
type budget struct {
	words, bytes, parsed, reads int
}

func newBudget() budget {
	return budget{words: maxWords, bytes: maxExpanded, parsed: maxParsed, reads: maxReads}
}

// spendWords takes n words of total length size from the budget, asking
// and reporting false once it is exhausted.
func (g *guard) spendWords(n, size int) bool {
	g.left.words -= n
	g.left.bytes -= size
	if g.left.words < 0 || g.left.bytes < 0 {
		g.verdict(Ask, "the command expands to more than %d words or %d bytes (brace expansion, xargs, parallel); wiggum's guard does not follow that far", maxWords, maxExpanded)
		return false
	}
	return true
}

// spendParse takes src from the parse budget and checks its nesting,
// asking and reporting false when the parser would take too long.
func (g *guard) spendParse(src string) bool {
	g.left.parsed -= len(src)
	if g.left.parsed < 0 {
		g.verdict(Ask, "the command holds more than %d bytes of nested code; wiggum's guard does not analyse that much", maxParsed)
		return false
	}
	if d := nesting(src); d > maxNesting {
		g.verdict(Ask, "the command nests brackets %d deep; wiggum's guard does not parse past %d", d, maxNesting)
		return false
	}
	return true
}

// nesting returns an upper bound of how deep brackets and quotes nest in
// shell source: single quotes, comments and here-document bodies are
// skipped as the shell reads them, and a closer only counts when it
// matches.
func nesting(src string) int {
	var stack []byte // the closer each open context waits for
	deepest := 0
	push := func(c byte) {
		stack = append(stack, c)
		deepest = max(deepest, len(stack))
	}
	top := func() byte {
		if len(stack) == 0 {
			return 0
		}
		return stack[len(stack)-1]
	}
	var heredocs []string // delimiters whose bodies start at the next newline
	for i := 0; i < len(src); i++ {
		c := src[i]
		if top() == '"' {
			var opened byte
			i, opened = inDouble(src, i)
			switch opened {
			case '"':
				stack = stack[:len(stack)-1]
			case ')', '}':
				push(opened)
			}
			continue
		}
		switch c {
		case '\\':
			i++
		case '\'':
			i = skipSingle(src, i, i > 0 && src[i-1] == '$')
		case '"':
			push('"')
		case '#':
			i = skipComment(src, i)
		case '(', '{', '[':
			push(closer(c))
		case ')', '}', ']':
			if top() == c {
				stack = stack[:len(stack)-1]
			}
		case '<':
			if d, end, ok := heredocStart(src, i); ok {
				heredocs = append(heredocs, d)
				i = end - 1
			}
		case '\n':
			for _, d := range heredocs {
				i = skipHeredoc(src, i+1, d)
			}
			heredocs = heredocs[:0]
		}
	}
	return deepest
}

// skipComment returns the index of the last byte of a comment starting at
// i, or i when the '#' does not start a comment there.
func skipComment(src string, i int) int {
	if i > 0 && !isSpace(src[i-1]) && strings.IndexByte(";(&|", src[i-1]) < 0 {
		return i
	}
	for i+1 < len(src) && src[i+1] != '\n' {
		i++
	}
	return i
}

// inDouble reads one step inside a double-quoted string at i: the index
// of the last byte read and '"' when the string closes there, or the
// closer a "$(" or "${" opened.
func inDouble(src string, i int) (int, byte) {
	switch c := src[i]; {
	case c == '\\':
		return i + 1, 0
	case c == '"':
		return i, '"'
	case c == '$' && i+1 < len(src) && (src[i+1] == '(' || src[i+1] == '{'):
		return i + 1, closer(src[i+1])
	}
	return i, 0
}

func closer(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '{':
		return '}'
	}
	return ']'
}

// endsWord reports whether c ends a shell word outside quotes.
func endsWord(c byte) bool { return isSpace(c) || strings.IndexByte(";|&<>)", c) >= 0 }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// skipSingle returns the index of the quote closing the single-quoted
// string opening at i; $'...' strings honour backslash escapes.
func skipSingle(src string, i int, ansi bool) int {
	for j := i + 1; j < len(src); j++ {
		if ansi && src[j] == '\\' {
			j++
			continue
		}
		if src[j] == '\'' {
			return j
		}
	}
	return len(src)
}

// heredocStart reads "<<WORD" or "<<-WORD" at i (not "<<<") and returns the
// delimiter and where the operator ends.
func heredocStart(src string, i int) (string, int, bool) {
	if i+1 >= len(src) || src[i+1] != '<' || (i+2 < len(src) && src[i+2] == '<') || (i > 0 && src[i-1] == '<') {
		return "", 0, false
	}
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
		j++
	}
	start := j
	var d []byte
	for j < len(src) && !endsWord(src[j]) {
		if src[j] != '\'' && src[j] != '"' && src[j] != '\\' {
			d = append(d, src[j])
		}
		j++
	}
	if j == start || len(d) == 0 {
		return "", 0, false
	}
	return string(d), j, true
}

// skipHeredoc returns the index just past the line holding only delim (tabs
// allowed before it), searching from i.
func skipHeredoc(src string, i int, delim string) int {
	for i < len(src) {
		end := i
		for end < len(src) && src[end] != '\n' {
			end++
		}
		line := src[i:end]
		for len(line) > 0 && line[0] == '\t' {
			line = line[1:]
		}
		if line == delim {
			return end
		}
		i = end + 1
	}
	return len(src)
}
