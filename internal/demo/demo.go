// Package demo builds the throwaway repository `wiggum demo` runs the real
// loop in, and holds the scripted agent and test gate that run there: two
// stories pass, the third breaks the tests on its first attempt and passes
// on the retry, which sees the failure in its prompt.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// PlanPath is the demo plan, relative to the repository root.
const PlanPath = ".ralph/PRD-1/plan.md"

const planText = `# Demo plan: greetings

- [ ] US-1: Greet in English
- [ ] US-2: Greet in French
- [ ] US-3: Greet in German

### US-1: Greet in English
Create greetings/en.txt containing "hello".

### US-2: Greet in French
Create greetings/fr.txt containing "bonjour".

### US-3: Greet in German
Create greetings/de.txt containing "hallo". Keep the other greetings intact.
`

const readme = `# wiggum demo

A throwaway repository made by 'wiggum demo'. The loop works through
.ralph/PRD-1/plan.md with a scripted agent; 'wiggum demo-agent test' is the
test gate every story must pass.
`

// want is what the test gate checks, per greeting file.
var want = map[string]string{"en.txt": "hello", "fr.txt": "bonjour", "de.txt": "hallo"}

// Setup creates a repository with the demo plan in a new directory under
// parent and returns its path. It has its own identity and hooks setting,
// so the user's global git configuration cannot break it.
func Setup(ctx context.Context, parent string) (string, error) {
	dir, err := os.MkdirTemp(parent, "wiggum-demo-")
	if err != nil {
		return "", fmt.Errorf("demo: create directory: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(PlanPath)), 0o755); err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	files := map[string]string{PlanPath: planText, "README.md": readme, "greetings/.keep": ""}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("demo: %w", err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", fmt.Errorf("demo: write %s: %w", name, err)
		}
	}
	steps := [][]string{
		{"init", "-q"},
		{"symbolic-ref", "HEAD", "refs/heads/main"},
		{"config", "user.name", "wiggum demo"},
		{"config", "user.email", "demo@wiggum.invalid"},
		{"config", "commit.gpgsign", "false"},
		// The demo tells its stories from the commit subjects: the
		// default message, whatever the user's global config says.
		{"config", "wiggum.commitMessage", "{{STORY_ID}}: {{STORY_TITLE}}"},
		{"config", "core.hooksPath", ".git/hooks"},
		{"add", "-A"},
		{"commit", "-q", "-m", "demo: plan with three stories"},
	}
	for _, args := range steps {
		if err := gitIn(ctx, dir, args...); err != nil {
			return "", fmt.Errorf("demo: %w", err)
		}
	}
	return dir, nil
}

func gitIn(ctx context.Context, dir string, args ...string) error {
	// git.Open needs a repository; before `git init` there is none, so the
	// first steps go through a Repo value pointing at the directory.
	r := &git.Repo{Root: dir}
	_, err := r.Run(ctx, args...)
	return err
}

// Agent is the scripted agent: it reads the prompt on stdin and does what
// the story asks, except that US-3's first attempt "refactors" the English
// greeting, breaking the tests, and commits that itself.
func Agent(stdin io.Reader, stdout io.Writer, dir string) int {
	prompt, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintf(stdout, "cannot read the prompt: %v\n", err)
		return 1
	}
	story := os.Getenv("WIGGUM_STORY")
	retry := strings.Contains(string(prompt), "previous attempt at this story failed")
	say := func(format string, args ...any) {
		fmt.Fprintf(stdout, format+"\n", args...)
		time.Sleep(60 * time.Millisecond)
	}
	say("read the prompt (%d lines) for %s", strings.Count(string(prompt), "\n"), story)
	file, word := "", ""
	switch story {
	case "US-1":
		file, word = "en.txt", "hello"
	case "US-2":
		file, word = "fr.txt", "bonjour"
	case "US-3":
		file, word = "de.txt", "hallo"
	default:
		say("no idea how to do %q", story)
		return 1
	}
	if story == "US-3" && !retry {
		say("writing greetings/de.txt, and tidying greetings/en.txt while I am at it")
		if err := writeGreeting(dir, "en.txt", "HELLO!!"); err != nil {
			say("%v", err)
			return 1
		}
		if err := writeGreeting(dir, file, word); err != nil {
			say("%v", err)
			return 1
		}
		if err := gitIn(context.Background(), dir, "add", "-A"); err != nil {
			say("git add failed: %v", err)
			return 1
		}
		if err := gitIn(context.Background(), dir, "commit", "-q", "-m", "tidy greetings"); err != nil {
			say("commit failed: %v", err)
			return 1
		}
		say("committed my tidy-up; done")
		return 0
	}
	if retry {
		say("the prompt says my last attempt broke the tests; leaving en.txt alone this time")
	}
	say("writing greetings/%s", file)
	if err := writeGreeting(dir, file, word); err != nil {
		say("%v", err)
		return 1
	}
	say("done")
	return 0
}

func writeGreeting(dir, name, word string) error {
	return os.WriteFile(filepath.Join(dir, "greetings", name), []byte(word+"\n"), 0o644)
}

// Test is the demo's test gate: every greeting present must say exactly
// what its story asked for.
func Test(stdout io.Writer, dir string) int {
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	failed := 0
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, "greetings", n))
		if os.IsNotExist(err) {
			continue
		}
		got := strings.TrimSpace(string(data))
		if err != nil || got != want[n] {
			fmt.Fprintf(stdout, "FAIL greetings/%s: want %q, got %q\n", n, want[n], got)
			failed++
			continue
		}
		fmt.Fprintf(stdout, "ok   greetings/%s\n", n)
	}
	if failed > 0 {
		return 1
	}
	return 0
}
