package guard

import "strings"

// A lexer for inline interpreter code (python -c, perl -e, node -e, ...):
// just enough of each language to find its string literals, so the calls
// that run commands can be told from text that only mentions them.

// unknownCode stands, in shell code built from a literal, for a part only
// known when the interpreter runs (an interpolation).
const unknownCode = "$__wiggum_unknown"

// literal is one string literal in interpreter code.
type literal struct {
	start, end int    // byte offsets in the code, end exclusive
	value      string // with escapes decoded and interpolations as unknownCode
	command    bool   // a command literal: `...` in perl, ruby and php, qx//, %x()
}

// lexed is interpreter code with its literals found: masked is the code
// with every literal and comment blanked out, so calls and brackets can be
// matched without being fooled by text.
type lexed struct {
	lang   string
	code   string
	masked []byte
	lits   []literal
}

func lex(lang, code string) *lexed {
	l := &lexed{lang: lang, code: code, masked: []byte(code)}
	for i := 0; i < len(code); {
		if end := l.comment(code, i); end > i {
			l.blank(i, end)
			i = end
			continue
		}
		if lit, ok := l.literalAt(code, i); ok {
			l.lits = append(l.lits, lit)
			l.blank(lit.start, lit.end)
			i = lit.end
			continue
		}
		i++
	}
	return l
}

func (l *lexed) blank(from, to int) {
	for i := from; i < to && i < len(l.masked); i++ {
		if l.masked[i] != '\n' {
			l.masked[i] = ' '
		}
	}
}

// comment returns where a comment starting at i ends, or i.
func (l *lexed) comment(code string, i int) int {
	atWord := i == 0 || isSpace(code[i-1]) || code[i-1] == ';'
	switch {
	case code[i] == '#' && atWord && l.lang != "node":
	case strings.HasPrefix(code[i:], "//") && atWord && (l.lang == "node" || l.lang == "php"):
	case strings.HasPrefix(code[i:], "/*") && (l.lang == "node" || l.lang == "php"):
		if end := strings.Index(code[i+2:], "*/"); end >= 0 {
			return i + 2 + end + 2
		}
		return len(code)
	default:
		return i
	}
	if end := strings.IndexByte(code[i:], '\n'); end >= 0 {
		return i + end
	}
	return len(code)
}

// literalAt reads a string literal starting at i.
func (l *lexed) literalAt(code string, i int) (literal, bool) {
	c := code[i]
	prev := byte(' ')
	if i > 0 {
		prev = code[i-1]
	}
	switch {
	case c == '\'' || c == '"':
		if l.lang == "python" {
			return l.python(code, i)
		}
		return l.quoted(code, i, c, c, c == '"' && l.lang != "node", false), true
	case c == '`':
		// A template in JavaScript, a command everywhere else.
		return l.quoted(code, i, '`', '`', true, l.lang != "node"), true
	case l.lang == "python" && strings.IndexByte("rRbBuUfF", c) >= 0 && !isIdentByte(prev):
		return l.python(code, i)
	case l.lang == "perl" && (c == 'q') && !isIdentByte(prev):
		return l.perlQuote(code, i)
	case l.lang == "ruby" && c == '%' && i+2 < len(code) && strings.IndexByte("qQwWx", code[i+1]) >= 0:
		open := code[i+2]
		if closeOf(open) == 0 {
			return literal{}, false
		}
		lit := l.quoted(code, i+2, open, closeOf(open), code[i+1] != 'q' && code[i+1] != 'w', code[i+1] == 'x')
		lit.start = i
		return lit, true
	}
	return literal{}, false
}

// python reads a python string: optional prefix letters, then '...', "...",
// or a triple-quoted string; f-strings interpolate {...}.
func (l *lexed) python(code string, i int) (literal, bool) {
	j := i
	for j < len(code) && j-i < 2 && strings.IndexByte("rRbBuUfF", code[j]) >= 0 {
		j++
	}
	if j >= len(code) || (code[j] != '\'' && code[j] != '"') {
		return literal{}, false
	}
	prefix := strings.ToLower(code[i:j])
	raw, fstr := strings.Contains(prefix, "r"), strings.Contains(prefix, "f")
	q := code[j]
	triple := strings.Repeat(string(q), 3)
	var b strings.Builder
	if strings.HasPrefix(code[j:], triple) {
		end := strings.Index(code[j+3:], triple)
		if end < 0 {
			end = len(code) - j - 3
		}
		body := code[j+3 : j+3+end]
		writeBody(&b, body, raw, fstr)
		return literal{start: i, end: min(j+3+end+3, len(code)), value: b.String()}, true
	}
	k := j + 1
	for k < len(code) && code[k] != q && code[k] != '\n' {
		if code[k] == '\\' {
			k++
		}
		k++
	}
	body := code[j+1 : min(k, len(code))]
	writeBody(&b, body, raw, fstr)
	return literal{start: i, end: min(k+1, len(code)), value: b.String()}, true
}

// writeBody decodes a python string body.
func writeBody(b *strings.Builder, body string, raw, fstr bool) {
	for k := 0; k < len(body); k++ {
		c := body[k]
		switch {
		case fstr && c == '{' && k+1 < len(body) && body[k+1] == '{':
			b.WriteByte('{')
			k++
		case fstr && c == '{':
			end := strings.IndexByte(body[k:], '}')
			if end < 0 {
				end = len(body) - k - 1
			}
			b.WriteString(unknownCode)
			k += end
		case !raw && c == '\\' && k+1 < len(body):
			k++
			b.WriteString(escapeChar(body[k]))
		default:
			b.WriteByte(c)
		}
	}
}

// quoted reads a literal from open to close (nesting when they differ),
// decoding backslash escapes; interp marks "$x", "#{x}", "${x}" and
// "{$x}" as unknown.
func (l *lexed) quoted(code string, i int, open, close byte, interp, command bool) literal {
	var b strings.Builder
	depth := 1
	k := i + 1
	for ; k < len(code); k++ {
		c := code[k]
		if c == '\\' && k+1 < len(code) {
			k++
			if open == '\'' && code[k] != '\'' && code[k] != '\\' {
				b.WriteByte('\\')
				b.WriteByte(code[k])
			} else {
				b.WriteString(escapeChar(code[k]))
			}
			continue
		}
		if open != close && c == open {
			depth++
		} else if c == close {
			depth--
			if depth == 0 {
				break
			}
		}
		if interp {
			if end := interpolation(code, k, l.lang); end > k {
				b.WriteString(unknownCode)
				k = end - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return literal{start: i, end: min(k+1, len(code)), value: b.String(), command: command}
}

// interpolation returns where an interpolation starting at k ends, or k.
func interpolation(code string, k int, lang string) int {
	rest := code[k:]
	var open string
	switch {
	case lang == "ruby" && strings.HasPrefix(rest, "#{"):
		open = "#{"
	case (lang == "node" || lang == "perl" || lang == "php") && strings.HasPrefix(rest, "${"):
		open = "${"
	case lang == "php" && strings.HasPrefix(rest, "{$"):
		open = "{$"
	case (lang == "perl" || lang == "php") && (rest[0] == '$' || (lang == "perl" && rest[0] == '@')) && len(rest) > 1 && (isIdentByte(rest[1]) || rest[1] == '{'):
		j := 1
		for j < len(rest) && isIdentByte(rest[j]) {
			j++
		}
		return k + j
	default:
		return k
	}
	end := strings.IndexByte(rest[len(open):], '}')
	if end < 0 {
		return len(code)
	}
	return k + len(open) + end + 1
}

// perlQuote reads q(), qq{}, qw// and qx” literals.
func (l *lexed) perlQuote(code string, i int) (literal, bool) {
	j := i + 1
	kind := "q"
	if j < len(code) && (code[j] == 'q' || code[j] == 'w' || code[j] == 'x') {
		kind += string(code[j])
		j++
	}
	if j >= len(code) || isIdentByte(code[j]) || isSpace(code[j]) || code[j] == '=' || code[j] == ',' || code[j] == ';' || code[j] == ')' {
		return literal{}, false
	}
	closer := closeOf(code[j])
	if closer == 0 {
		closer = code[j]
	}
	lit := l.quoted(code, j, code[j], closer, kind == "qq" || kind == "qx", kind == "qx")
	lit.start = i
	return lit, true
}

func closeOf(open byte) byte {
	switch open {
	case '(':
		return ')'
	case '[':
		return ']'
	case '{':
		return '}'
	case '<':
		return '>'
	case '|', '!', '/', '^', '~', '#', '\'', '"':
		return open
	}
	return 0
}

func escapeChar(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case 'r':
		return "\r"
	case '0':
		return ""
	}
	return string(c)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
