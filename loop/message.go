package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

// DefaultCommitMessage is the template of a story's commit message when
// neither --commit-message nor git config wiggum.commitMessage gives one.
const DefaultCommitMessage = "{{STORY_ID}}: {{STORY_TITLE}}"

// CommitMessageKey is the git config key a repository (or the user) keeps
// its template in, for every run: a commit-msg hook's rules (conventional
// commits, commitlint) are the project's.
const CommitMessageKey = "wiggum.commitMessage"

// Placeholders of a commit message template: the story's id, its title,
// and its title with a lower-case first letter (conventional commits'
// subject-case) unless its first word is in capitals (API, CSS).
var messagePlaceholders = []string{"{{STORY_ID}}", "{{STORY_TITLE}}", "{{story_title}}"}

// commitTemplate renders the commit messages of a run's stories.
type commitTemplate string

// checkCommitMessage refuses a template that is empty or names a
// placeholder there is none of (a typo would be committed as it is).
func checkCommitMessage(t, from string) error {
	if strings.TrimSpace(t) == "" {
		return badinput.Errorf("run: the commit message template (%s) is empty", from)
	}
	rest := t
	for _, p := range messagePlaceholders {
		rest = strings.ReplaceAll(rest, p, "")
	}
	if i := strings.Index(rest, "{{"); i >= 0 {
		name := rest[i:]
		if j := strings.Index(name, "}}"); j >= 0 {
			name = name[:j+2]
		}
		return badinput.Errorf("run: the commit message template (%s) has %s, which is no placeholder; it knows %s", from, name, strings.Join(messagePlaceholders, ", "))
	}
	return nil
}

// story is the message of s's commit. The default with no title is the
// story's id alone.
func (t commitTemplate) story(s *plan.Story) string {
	title := strings.TrimSpace(s.Title)
	if t == "" || t == DefaultCommitMessage {
		if title == "" {
			return s.ID
		}
		return s.ID + ": " + title
	}
	return t.render(s.ID, title)
}

// tick is the message of a commit that ticks s alone (a plan that was
// dirty before the run, or a resume's): the template, titled "mark done".
func (t commitTemplate) tick(s *plan.Story) string {
	if t == "" || t == DefaultCommitMessage {
		return s.ID + ": mark done"
	}
	title := "mark done"
	if !strings.Contains(string(t), "{{STORY_ID}}") {
		title = "mark " + s.ID + " done"
	}
	return t.render(s.ID, title)
}

func (t commitTemplate) render(id, title string) string {
	msg := strings.NewReplacer("{{STORY_ID}}", id, "{{STORY_TITLE}}", title, "{{story_title}}", lowerFirst(title)).Replace(string(t))
	if strings.TrimSpace(msg) == "" {
		return id
	}
	return msg
}

// lowerFirst puts s's first letter in lower case, unless its first word
// is in capitals (an acronym).
func lowerFirst(s string) string {
	word, _, _ := strings.Cut(s, " ")
	if utf8.RuneCountInString(word) > 1 && strings.ToUpper(word) == word {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// MessageRefusedError is the user's commit-msg hook refusing the message
// the loop commits a story with (a conventional-commits check, say).
// Before the first attempt the run does not start (exit 2); at a story's
// commit the run stops with that attempt's work left uncommitted, as for
// a SigningError, and the next run - with a template the hook accepts -
// commits it without running the agent again.
type MessageRefusedError struct {
	passedWork
	Message string
	Output  string // what the hook said
}

func (e *MessageRefusedError) Error() string {
	how := fmt.Sprintf("give a template it accepts, with --commit-message or for every run git config %s (placeholders %s; for conventional commits, say, 'feat: {{story_title}}')",
		CommitMessageKey, strings.Join(messagePlaceholders, ", "))
	// One line (exit 2's reason is): the hook's lines joined.
	said := oneLine(e.Output, 1000)
	if e.Story == "" {
		return fmt.Sprintf("run: your commit-msg hook refuses the message the loop would commit with, %q: %s. To go on, %s; nothing changed", e.Message, said, how)
	}
	return fmt.Sprintf("run: %s passed, but your commit-msg hook refuses its commit message %q: %s. To go on, %s. %s", e.Story, e.Message, said, how, e.left())
}

// checkMessage runs the repository's commit-msg hook, as git commit would
// run it, on msg: nil when it accepts it or there is no such hook (or a
// git too old for git hook run, which then leaves it to the commit). Its
// error is a *MessageRefusedError.
func checkMessage(ctx context.Context, repo *git.Repo, msg string) error {
	if _, err := os.Stat(filepath.Join(repo.HooksDir, "commit-msg")); err != nil {
		return nil
	}
	f, err := os.CreateTemp(repo.GitDir, "WIGGUM_COMMIT_MSG_")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(msg + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return err
	}
	out, err := repo.RunUnattended(ctx, nil, nil, "hook", "run", "--ignore-missing", "commit-msg", "--", f.Name())
	var ge *git.Error
	if err == nil || !errors.As(err, &ge) || strings.Contains(ge.Stderr, "'hook' is not a git command") {
		return nil
	}
	return &MessageRefusedError{Message: msg, Output: strings.TrimSpace(out + "\n" + ge.Stderr)}
}
