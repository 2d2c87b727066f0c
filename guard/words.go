package guard

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// WordValue returns the value a shell word has after quote removal, and
// whether it is fully known before running. Unknown parts read as a NUL
// byte; $HOME reads as ~.
func WordValue(w *syntax.Word) (string, bool) { return wordValue(w) }

func wordValue(w *syntax.Word) (string, bool) {
	var b strings.Builder
	lit := wordParts(&b, w.Parts, false)
	return b.String(), lit
}

func wordParts(b *strings.Builder, parts []syntax.WordPart, quoted bool) bool {
	lit := true
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			b.WriteString(sglValue(p))
		case *syntax.DblQuoted:
			if !wordParts(b, p.Parts, true) {
				lit = false
			}
		case *syntax.ParamExp:
			if p.Param != nil && p.Param.Value == "HOME" && p.Exp == nil && p.Repl == nil && p.Slice == nil && !p.Length && !p.Excl && p.Index == nil {
				b.WriteString("~")
				continue
			}
			b.WriteString(dynamic)
			lit = false
		default:
			b.WriteString(dynamic)
			lit = false
		}
	}
	return lit
}

// sglValue is the value of '...' or of $'...' with its escapes decoded.
func sglValue(q *syntax.SglQuoted) string {
	if q.Dollar {
		return ansiC(q.Value)
	}
	return q.Value
}

// unescape removes the backslashes the shell would remove.
func unescape(s string, quoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			next := s[i+1]
			if !quoted || strings.IndexByte("$`\"\\\n", next) >= 0 {
				if next != '\n' {
					b.WriteByte(next)
				}
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// codeText turns a word holding shell code (the argument of bash -c or
// eval, a here-document body) into source to parse: quotes are removed,
// expansions stay as written so the parse sees them as unknown.
func codeText(w *syntax.Word) string {
	var b strings.Builder
	codeParts(&b, w.Parts, false)
	return b.String()
}

func codeParts(b *strings.Builder, parts []syntax.WordPart, quoted bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescape(p.Value, quoted))
		case *syntax.SglQuoted:
			b.WriteString(sglValue(p))
		case *syntax.DblQuoted:
			codeParts(b, p.Parts, true)
		default:
			var buf bytes.Buffer
			if err := syntax.NewPrinter().Print(&buf, &syntax.Word{Parts: []syntax.WordPart{p}}); err != nil {
				b.WriteString("$__wiggum_unknown")
				continue
			}
			b.Write(buf.Bytes())
		}
	}
}

func printable(s string) string {
	return strings.ReplaceAll(s, dynamic, "…")
}

// expandArgs returns a command's words as the shell passes them to the
// program: brace expansion applied ("git {push,}" is "git push"), quotes
// and escapes removed. src[i] is the word args[i] came from; lit reports
// whether every argument is known before running; ok is false when the
// expansion budget ran out (the guard has then asked).
func (g *guard) expandArgs(words []*syntax.Word) (args []string, src []*syntax.Word, lit, ok bool) {
	lit = true
	add := func(v string, l bool, from *syntax.Word) {
		args = append(args, v)
		src = append(src, from)
		lit = lit && l
	}
	for _, word := range words {
		braced := *word
		if !syntax.SplitBraces(&braced) {
			v, l := wordValue(word)
			add(v, l, word)
			continue
		}
		ok := g.braces(braced.Parts, "", true, func(v string, l bool) bool {
			if !g.spendWords(1, len(v)) {
				return false
			}
			if v != "" { // bash drops the empty words braces make: {push,}
				add(v, l, word)
			}
			return true
		})
		if !ok {
			return nil, nil, false, false
		}
	}
	return args, src, lit, true
}

// braces yields every word brace expansion makes of prefix followed by
// parts, stopping (and returning false) when yield does.
func (g *guard) braces(parts []syntax.WordPart, prefix string, lit bool, yield func(string, bool) bool) bool {
	var b strings.Builder
	b.WriteString(prefix)
	for i, p := range parts {
		br, ok := p.(*syntax.BraceExp)
		if !ok {
			lit = wordParts(&b, parts[i:i+1], false) && lit
			continue
		}
		rest := parts[i+1:]
		if br.Sequence {
			items, ok := sequence(br)
			if !ok {
				return g.spendWords(maxWords+1, 0)
			}
			for _, item := range items {
				if !g.braces(rest, b.String()+item, lit, yield) {
					return false
				}
			}
			return true
		}
		for _, elem := range br.Elems {
			if !g.braces(append(append([]syntax.WordPart{}, elem.Parts...), rest...), b.String(), lit, yield) {
				return false
			}
		}
		return true
	}
	return yield(b.String(), lit)
}

// sequence lists the items of {x..y[..step]}; false when there are more
// than the guard follows.
func sequence(br *syntax.BraceExp) ([]string, bool) {
	from, to := br.Elems[0].Lit(), br.Elems[1].Lit()
	if len(from) > 9 || len(to) > 9 {
		return nil, false
	}
	a, err1 := strconv.Atoi(from)
	z, err2 := strconv.Atoi(to)
	chars := err1 != nil || err2 != nil
	if chars {
		if from == "" || to == "" {
			return nil, true
		}
		a, z = int(from[0]), int(to[0])
	}
	step := 1
	if len(br.Elems) > 2 {
		if n, err := strconv.Atoi(br.Elems[2].Lit()); err == nil && n != 0 {
			step = max(n, -n)
		}
	}
	if (max(a, z)-min(a, z))/step >= maxWords {
		return nil, false
	}
	width := 0
	if !chars && (len(from) > 1 && from[0] == '0' || len(to) > 1 && to[0] == '0') {
		width = max(len(from), len(to))
	}
	if a > z {
		step = -step
	}
	var items []string
	for n := a; (step > 0 && n <= z) || (step < 0 && n >= z); n += step {
		if chars {
			items = append(items, string(rune(n)))
		} else {
			items = append(items, fmt.Sprintf("%0*d", width, n))
		}
	}
	return items, true
}

// ansiC decodes the backslash escapes of a $'...' string as bash does.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'c':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			n := 2
			if c == 'u' {
				n = 4
			} else if c == 'U' {
				n = 8
			}
			v, used := digits(s[i+1:], n, 16)
			if used == 0 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			i += used
			if c == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, used := digits(s[i:], 3, 8)
			i += used - 1
			b.WriteByte(byte(v))
		default: // \\ \' \" \? and unknown escapes
			if strings.IndexByte(`\'"?`, c) < 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// digits reads up to n digits in base from the start of s.
func digits(s string, n, base int) (value, used int) {
	for used < n && used < len(s) {
		d := strings.IndexByte("0123456789abcdef", s[used]|0x20)
		if s[used] >= '0' && s[used] <= '9' {
			d = int(s[used] - '0')
		}
		if d < 0 || d >= base {
			break
		}
		value = value*base + d
		used++
	}
	return value, used
}
