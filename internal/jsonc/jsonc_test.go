package jsonc

import "testing"

// Comments become spaces; comment marks inside strings are text.
func TestBlank(t *testing.T) {
	if got := string(Blank([]byte(`{"a": "//x", "b": "/*y*/", "c": "\"//"} // z`))); got != `{"a": "//x", "b": "/*y*/", "c": "\"//"}     ` {
		t.Fatalf("Blank: %q", got)
	}
	if got := string(Blank([]byte("[1, /* a\nb */ 2]"))); got != "[1,     \n     2]" {
		t.Fatalf("Blank across lines: %q", got)
	}
}
