package guard

import (
	"bytes"
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
			b.WriteString(p.Value)
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
			b.WriteString(p.Value)
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
