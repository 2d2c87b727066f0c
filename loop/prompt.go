package loop

import (
	"strconv"
	"strings"
)

// DefaultPrompt is the built-in prompt; --prompt FILE replaces it. Every
// {{NAME}} placeholder is replaced literally, in one pass: story text that
// itself contains "{{ITERATION}}" or "$(rm -rf)" arrives as written.
const DefaultPrompt = `You are one iteration of an autonomous coding loop. Implement exactly one
story from the plan, completely, then stop.

## Your story: {{STORY_ID}} - {{STORY_TITLE}}

{{STORY}}

## Context
- The whole plan: {{PLAN_PATH}} (read it for context; do not work on other stories).
- What earlier iterations did and learned: {{PROGRESS_PATH}}
- This is iteration {{ITERATION}}.

{{FAILURE_CONTEXT}}

## Rules
1. Read the relevant code before changing it; follow the project's conventions.
2. Implement the story fully, with tests for the new behaviour.
3. Run the project's tests and type checks; fix what you broke until they pass.
4. Do not mark the story done and do not edit the plan: the loop does that
   after it has verified your work.
5. You may commit, but you do not have to: the loop commits everything you
   leave in the working tree, new files included.
6. Finish by saying in a few lines what you changed and anything the next
   iteration should know.
`

// Vars are the values of the placeholders.
type Vars struct {
	StoryID, StoryTitle, Story string
	PlanPath, ProgressPath     string
	Iteration                  int
	FailureContext             string
}

// Render substitutes the placeholders in template.
func Render(template string, v Vars) string {
	return strings.NewReplacer(
		"{{STORY_ID}}", v.StoryID,
		"{{STORY_TITLE}}", v.StoryTitle,
		"{{STORY}}", v.Story,
		"{{PLAN_PATH}}", v.PlanPath,
		"{{PROGRESS_PATH}}", v.ProgressPath,
		"{{ITERATION}}", strconv.Itoa(v.Iteration),
		"{{FAILURE_CONTEXT}}", v.FailureContext,
	).Replace(template)
}

// commandLine is argv as a shell would take it back: each argument that is
// not plain words quoted, so that the command shown (in the failure
// context of the next prompt, in --dry-run) is the one that ran.
func commandLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shellWord(a)
	}
	return strings.Join(out, " ")
}

func shellWord(s string) string {
	if s == "" {
		return "''"
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./:=@%+,", c)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
