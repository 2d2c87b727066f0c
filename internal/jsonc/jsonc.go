// Package jsonc reads JSON with comments as Gemini CLI reads its settings
// (JSON.parse(stripJsonComments(text))): // and /* */ comments are
// whitespace, and nothing else is relaxed.
package jsonc

import "bytes"

// Blank is data with its // and /* */ comments blanked out (each byte a
// space, line breaks kept, so every offset stays where it was), strings
// left as they are. An unterminated block comment leaves data as it is.
func Blank(data []byte) []byte {
	out := bytes.Clone(data)
	inString, escaped := false, false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for i < len(out) && out[i] != '\n' {
				out[i] = ' '
				i++
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return data // unterminated: not JSON either way
			}
			for j := i; j < i+2+end+2; j++ {
				if out[j] != '\n' {
					out[j] = ' '
				}
			}
			i += 2 + end + 1
		}
	}
	return out
}
