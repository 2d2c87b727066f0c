// Command agenthooks times real Claude Code Bash tool calls with and
// without wiggum's hooks installed, against conformance/fakemodel: the model
// asks for N `true` commands in a row, and the time between two of its
// requests is one tool call as the user waits for it (claude's own work,
// PreToolUse, the command, PostToolUse). Sessions with and without hooks
// alternate, so machine drift hits both alike; it prints medians.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/bench/internal/stats"
	"github.com/wiggum-dev/wiggum/conformance/fakemodel"
)

func main() {
	claude := flag.String("claude", "", "the claude executable")
	wiggum := flag.String("wiggum", "", "the wiggum executable")
	dir := flag.String("dir", "", "a scratch directory")
	calls := flag.Int("calls", 20, "tool calls per claude session")
	sessions := flag.Int("sessions", 6, "claude sessions per variant")
	before := flag.String("before", "", "an earlier wiggum executable whose hooks are timed too, interleaved (optional)")
	flag.Parse()
	if err := run(*claude, *wiggum, *before, *dir, *calls, *sessions); err != nil {
		fmt.Fprintln(os.Stderr, "agenthooks:", err)
		os.Exit(1)
	}
}

func run(claude, wiggum, before, dir string, calls, sessions int) error {
	srv, err := fakemodel.Start()
	if err != nil {
		return err
	}
	defer srv.Close()
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "HOME="+home, "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=sk-bench",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"PATH="+filepath.Dir(wiggum)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b")
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1")
	}
	variants := []string{"without", "trivial", "with"}
	repos := map[string]string{"without": filepath.Join(dir, "plain"), "trivial": filepath.Join(dir, "trivial"), "with": filepath.Join(dir, "hooked")}
	if before != "" {
		variants = append(variants, "before")
		repos["before"] = filepath.Join(dir, "hooked-before")
	}
	for name, repo := range repos {
		if err := sh(repo, env, "git", "init", "-q", repo); err != nil {
			return err
		}
		switch name {
		case "with":
			if err := sh(repo, env, wiggum, "install", "--claude"); err != nil {
				return err
			}
		case "before":
			// wiggum install writes "wiggum hook claude"; name the earlier
			// binary by its path instead.
			if err := sh(repo, env, wiggum, "install", "--claude"); err != nil {
				return err
			}
			path := filepath.Join(repo, ".claude", "settings.json")
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.Contains(string(data), `"wiggum hook claude`) {
				return fmt.Errorf("no wiggum hook command in %s", path)
			}
			data = []byte(strings.ReplaceAll(string(data), `"wiggum hook claude`, `"`+before+` hook claude`))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
		case "trivial":
			hook := `[{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat > /dev/null", "timeout": 10}]}]`
			settings := `{"hooks": {"PreToolUse": ` + hook + `, "PostToolUse": ` + hook + `}}`
			if err := os.MkdirAll(filepath.Join(repo, ".claude"), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(repo, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
				return err
			}
		}
		if err := sh(repo, env, "git", "commit", "-q", "--allow-empty", "-m", "init"); err != nil {
			return err
		}
	}
	turns := make([]fakemodel.Turn, calls)
	for i := range turns {
		turns[i] = fakemodel.Turn{Shell: "true"}
	}
	turns = append(turns, fakemodel.Turn{Text: "done"})
	samples := map[string][]time.Duration{}
	for s := 0; s < sessions; s++ {
		for _, name := range variants {
			srv.Script(turns...)
			// Inside a session, as under wiggum run: the guard is on.
			cmd := exec.Command(wiggum, "lock", "--", claude, "-p", "--output-format", "stream-json", "--verbose",
				"--dangerously-skip-permissions")
			cmd.Dir, cmd.Env = repos[name], env
			cmd.Stdin = strings.NewReader("run true until told otherwise")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("claude (%s hooks): %v\n%s", name, err, out)
			}
			req := srv.Scripted()
			if len(req) != calls+1 {
				return fmt.Errorf("claude (%s hooks) made %d scripted requests, want %d", name, len(req), calls+1)
			}
			// The first call carries claude's start-up; leave it out.
			for i := 2; i < len(req); i++ {
				samples[name] = append(samples[name], req[i].Time.Sub(req[i-1].Time))
			}
		}
	}
	without, trivial, with := stats.Median(samples["without"]), stats.Median(samples["trivial"]), stats.Median(samples["with"])
	fmt.Printf("claude Bash tool call, median of %d calls per variant (%d sessions each, interleaved)\n", len(samples["with"]), sessions)
	fmt.Printf("  no hooks                  %7.1f ms\n", ms(without))
	fmt.Printf("  trivial hooks (cat)       %7.1f ms  (+%.1f ms: claude running any pre+post hook)\n", ms(trivial), ms(trivial-without))
	fmt.Printf("  wiggum's hooks            %7.1f ms  (+%.1f ms per tool call; +%.1f ms over the trivial hooks)\n", ms(with), ms(with-without), ms(with-trivial))
	if before != "" {
		b := stats.Median(samples["before"])
		fmt.Printf("  before's hooks            %7.1f ms  (+%.1f ms per tool call; +%.1f ms over the trivial hooks)\n", ms(b), ms(b-without), ms(b-trivial))
	}
	return nil
}

func sh(dir string, env []string, name string, args ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
