package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/agent"
	"github.com/wiggum-dev/wiggum/internal/demo"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/proc"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/loop"
)

// DemoCmd is `wiggum demo`.
type DemoCmd struct {
	In string `placeholder:"DIR" type:"existingdir" help:"Create the demo repository under DIR instead of the system temp directory."`
}

// Help is shown by `wiggum demo --help`.
func (c *DemoCmd) Help() string {
	return `Shows the whole cycle in a few seconds, with nothing but wiggum and git:
creates a throwaway repository with a three-story plan and runs the real
loop on it with a built-in scripted agent. Two stories pass; the third
breaks the tests on its first attempt (and the agent commits the damage), so
the loop rolls it back - saving it in a backup ref first - and retries with
the failure in the prompt; the retry passes. The repository is kept so you
can look around.

  wiggum demo
  wiggum demo --in .`
}

// Run runs the demo.
func (c *DemoCmd) Run(ctx context.Context, g *Globals) error {
	out := g.stdout
	dir, err := demo.Setup(ctx, c.In)
	if err != nil {
		return err
	}
	self, err := selfBinary()
	if err != nil {
		return err
	}
	st, err := checkpoint.Open(ctx, dir)
	if err != nil {
		return err
	}
	p, err := plan.Resolve(st.Repo.Root, st.Repo.Root, plan.Source{PRD: "1"})
	if err != nil {
		return err
	}
	gate := proc.CommandLine([]string{self, "demo-agent", "test"})
	fmt.Fprintf(out, "wiggum demo: the real loop, a scripted agent, a throwaway repository\n")
	fmt.Fprintf(out, "  repository  %s\n  plan        %s (3 stories)\n  test gate   wiggum demo-agent test\n\n", dir, demo.PlanPath)
	start := time.Now()
	sum, err := loop.Run(ctx, st, loop.Options{
		Plan:    p,
		Agent:   agent.Profile{Name: "demo", Argv: []string{self, "demo-agent"}},
		TestCmd: gate, Retries: 2, MaxIter: 10, NoProgress: 5,
		Timeout: time.Minute, Grace: 2 * time.Second, Policy: session.PolicyRecord,
		Out: out, Live: isTerminal(out), Width: func() int { return termWidth(out) }, Command: []string{"wiggum", "demo"},
	})
	if ierr := Interrupted(ctx); ierr != nil {
		return ierr
	}
	if err != nil {
		return fmt.Errorf("demo: the loop failed in %s: %w", dir, err)
	}
	fmt.Fprintf(out, "\nWhat happened (%s, %d iterations):\n", time.Since(start).Round(10*time.Millisecond), sum.Iterations)
	if err := c.story(ctx, st, sum, out); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nThe loop held the agent lock for the whole run, checkpointed before each\niteration, and decided every outcome itself with the test gate.\n")
	if len(sum.Backups) > 0 {
		fmt.Fprintf(out, "\nLook at the rolled-back attempt:  git -C %s log --stat -2 %s\n", dir, sum.Backups[0])
		fmt.Fprintf(out, "List or restore saved attempts:   wiggum -C %s recover\n", dir)
	}
	fmt.Fprintf(out, "Progress log: %s\n", filepath.Join(dir, layout.RuntimeDir, loop.ProgressFile))
	fmt.Fprintf(out, "Clean up:     rm -rf %s\n", dir)
	return nil
}

// story tells, per story, what each attempt did, from the failure log and
// the history the run left.
func (c *DemoCmd) story(ctx context.Context, st *checkpoint.State, sum *loop.Summary, out io.Writer) error {
	log, err := st.Repo.Run(ctx, "log", "--format=%h %s")
	if err != nil {
		return err
	}
	commits := map[string]string{}
	for _, l := range strings.Split(log, "\n") {
		sha, subject, ok := strings.Cut(l, " ")
		if !ok || strings.HasSuffix(subject, ": mark done") {
			continue
		}
		if id, _, ok := strings.Cut(subject, ": "); ok {
			if _, seen := commits[id]; !seen {
				commits[id] = sha
			}
		}
	}
	for _, id := range sum.Completed {
		fails, err := session.Failures(st, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %s", id)
		indent := "  "
		for i, f := range fails {
			fmt.Fprintf(out, "%sattempt %d failed (%s): rolled back, saved in %s\n", indent, i+1, f.Source, f.Rollback)
			indent = "        "
			for _, l := range strings.Split(strings.TrimSpace(f.Output), "\n") {
				if strings.HasPrefix(l, "FAIL") {
					fmt.Fprintf(out, "%s  %s\n", indent, l)
				}
			}
		}
		note := ""
		if len(fails) > 0 {
			note = " (its prompt carried the failure)"
		}
		fmt.Fprintf(out, "%sdone on attempt %d, commit %s%s\n", indent, len(fails)+1, commits[id], note)
	}
	return nil
}

// selfBinary is the path of this wiggum, for the demo agent and gate.
func selfBinary() (string, error) {
	if a := os.Args[0]; strings.Contains(a, string(filepath.Separator)) {
		return filepath.Abs(a)
	}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		return filepath.Abs(p)
	}
	return os.Executable()
}

// DemoAgentCmd is the hidden scripted agent and test gate `wiggum demo` uses.
type DemoAgentCmd struct {
	Mode string `arg:"" optional:"" enum:"agent,test" default:"agent" help:"agent (read a prompt, do the story) or test (the gate)."`
}

// Run runs the scripted agent or the gate in the current directory.
func (c *DemoAgentCmd) Run(g *Globals) error {
	dir := g.WorkDir()
	var code int
	if c.Mode == "test" {
		code = demo.Test(g.stdout, dir)
	} else {
		code = demo.Agent(os.Stdin, g.stdout, dir)
	}
	if code != 0 {
		return Silent(code)
	}
	return nil
}
