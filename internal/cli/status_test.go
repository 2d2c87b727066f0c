package cli

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/termtext"
	"github.com/wiggum-dev/wiggum/loop"
)

// jsonKeys are the keys encoding/json writes for a struct type.
func jsonKeys(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// Scripts read status --json by the keys its help names: each key the
// output can hold is named there (a help that said "error" where the
// output held "errors" sent a script's check of a corrupt state file to
// a key that never comes).
func TestStatusHelpNamesEveryKey(t *testing.T) {
	help := (&StatusCmd{}).Help()
	for _, key := range jsonKeys(reflect.TypeFor[StatusReport]()) {
		if !strings.Contains(help, "\n  "+key+":") {
			t.Errorf("status --help does not name the top-level key %q", key)
		}
	}
	for typ, where := range map[reflect.Type]string{
		reflect.TypeFor[loop.RunState]():    "resume",
		reflect.TypeFor[LockStatus]():       "lock",
		reflect.TypeFor[CheckpointState]():  "checkpoint",
		reflect.TypeFor[JournalStatus]():    "journal",
		reflect.TypeFor[agent.Hooks]():      "agent_hooks",
		reflect.TypeFor[agent.PathLookup](): "wiggum_on_path",
	} {
		for _, key := range jsonKeys(typ) {
			if !regexp.MustCompile(`[{ (]` + regexp.QuoteMeta(key) + `[,}) ]`).MatchString(help) {
				t.Errorf("status --help does not name %s's key %q", where, key)
			}
		}
	}
}

// wiggum status's run line shows a long story title cut to
// termtext.TitleWidth cells (status --json keeps it whole).
func TestStatusRunLineCutsLongTitle(t *testing.T) {
	title := strings.Repeat("make the 报告 page faster ", 200)
	var out bytes.Buffer
	g := &Globals{stdout: &out, stderr: &out}
	printStatus(g, &StatusReport{Root: "/r", Run: &session.Run{Story: "US-1", StoryTitle: title, Iteration: 3, LastOutcome: "failed"}})
	for _, l := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(l, "run:") {
			continue
		}
		if w := termtext.Width(l); w > 40+termtext.TitleWidth+30 || !strings.Contains(l, "US-1 make the 报告") || !strings.Contains(l, "…, last outcome: failed") {
			t.Errorf("the run line takes %d cells: %.300q", w, l)
		}
		return
	}
	t.Fatalf("no run line:\n%.1000s", out.String())
}
