package checkpointentry

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args []string
		want *Command // nil: left to the CLI
	}{
		{[]string{"checkpoint"}, &Command{Name: "checkpoint", Reason: DefaultReason}},
		{[]string{"checkpoint", "--allow-detached", "--json"}, &Command{Name: "checkpoint", AllowDetached: true, JSON: true, Reason: DefaultReason}},
		{[]string{"rollback"}, &Command{Name: "rollback", Reason: DefaultReason}},
		{[]string{"rollback", "--dry-run", "--discard-foreign", "--json"}, &Command{Name: "rollback", DryRun: true, DiscardForeign: true, JSON: true, Reason: DefaultReason}},
		{[]string{"rollback", "--reason", "tests failed"}, &Command{Name: "rollback", Reason: "tests failed"}},
		{[]string{"rollback", "--reason=a=b"}, &Command{Name: "rollback", Reason: "a=b"}},
		{[]string{"rollback", "--reason="}, &Command{Name: "rollback", Reason: ""}},
		{[]string{"rollback", "--reason"}, nil},
		{[]string{"rollback", "--reason", "--json"}, nil},
		{[]string{"rollback", "--allow-detached"}, nil},
		{[]string{"checkpoint", "--dry-run"}, nil},
		{[]string{"checkpoint", "--json", "--json"}, nil},
		{[]string{"checkpoint", "--json=true"}, nil},
		{[]string{"checkpoint", "-h"}, nil},
		{[]string{"rollback", "--help"}, nil},
		{[]string{"checkpoint", "extra"}, nil},
		{[]string{"-C", "dir", "checkpoint"}, nil},
		{[]string{"status"}, nil},
		{nil, nil},
	} {
		got, ok := Parse(c.args)
		switch {
		case c.want == nil && ok:
			t.Errorf("Parse(%q) = %+v, want it left to the CLI", c.args, got)
		case c.want != nil && (!ok || !reflect.DeepEqual(got, *c.want)):
			t.Errorf("Parse(%q) = %+v %v, want %+v", c.args, got, ok, *c.want)
		}
	}
}
