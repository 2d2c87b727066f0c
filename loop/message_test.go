package loop

import (
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/plan"
)

func TestCommitTemplate(t *testing.T) {
	s := &plan.Story{ID: "US-7", Title: "Add OAuth login"}
	api := &plan.Story{ID: "US-8", Title: "API keys in settings"}
	bare := &plan.Story{ID: "US-9"}
	for _, c := range []struct {
		tmpl            commitTemplate
		story           *plan.Story
		wantMsg, wantTk string
	}{
		{"", s, "US-7: Add OAuth login", "US-7: mark done"},
		{DefaultCommitMessage, bare, "US-9", "US-9: mark done"},
		{"feat: {{story_title}}", s, "feat: add OAuth login", "feat: mark US-7 done"},
		{"feat: {{story_title}}", api, "feat: API keys in settings", "feat: mark US-8 done"},
		{"feat({{STORY_ID}}): {{STORY_TITLE}}\n\nRefs: {{STORY_ID}}", s, "feat(US-7): Add OAuth login\n\nRefs: US-7", "feat(US-7): mark done\n\nRefs: US-7"},
		{"{{STORY_TITLE}}", bare, "US-9", "mark US-9 done"},
	} {
		if got := c.tmpl.story(c.story); got != c.wantMsg {
			t.Errorf("%q.story(%s) = %q, want %q", c.tmpl, c.story.ID, got, c.wantMsg)
		}
		if got := c.tmpl.tick(c.story); got != c.wantTk {
			t.Errorf("%q.tick(%s) = %q, want %q", c.tmpl, c.story.ID, got, c.wantTk)
		}
	}
}

func TestCheckCommitMessage(t *testing.T) {
	for tmpl, want := range map[string]string{
		"feat: {{story_title}}":   "",
		"{{STORY_ID}}":            "",
		"  ":                      "is empty",
		"feat: {{STORY}}":         "has {{STORY}}, which is no placeholder",
		"fix: {{STORY_TITLE}} {{": "has {{, which is no placeholder",
	} {
		err := checkCommitMessage(tmpl, "--commit-message")
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("checkCommitMessage(%q) = %v, want %q", tmpl, err, want)
		}
	}
}
