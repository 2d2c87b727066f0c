package hooks

import "testing"

// objectEnd tells when the outermost value of a payload has closed,
// braces in strings and escaped quotes not counted.
func TestObjectEnd(t *testing.T) {
	for in, want := range map[string]bool{`{"a":"}"}`: true, `{"a":"\"}"`: false, `{"a":"\\"}`: true, `{"a":{"b":1}`: false, `[1,{}]`: true, `  `: false} {
		var o objectEnd
		if got := o.scan([]byte(in)); got != want {
			t.Errorf("%s: %v", in, got)
		}
	}
}
