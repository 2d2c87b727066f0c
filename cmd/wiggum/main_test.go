package main

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/wiggum-dev/wiggum/install"
)

var update = flag.Bool("u", false, "update testscript golden output")

func TestMain(m *testing.M) {
	// A script shortens the rails' time limit on reading git's
	// configuration (run_agent_config_fifo.txtar waits it out).
	if d, err := time.ParseDuration(os.Getenv("WIGGUM_TEST_CONFIG_READ_LIMIT")); err == nil {
		install.ConfigReadLimit = d
	}
	testscript.Main(m, map[string]func(){"wiggum": main, "stoppedholder": stoppedHolder})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "../../testdata/scripts",
		RequireExplicitExec: true,
		UpdateScripts:       *update,
		Setup:               setupEnv,
		Cmds:                scriptCmds(),
		Condition:           scriptCondition,
	})
}

// scriptCondition adds [ci] to the scripts' conditions: CI is set. A script
// that needs a tool skips without it only off CI ([!exec:tmux] [!ci] skip):
// there, a tool missing fails the script.
func scriptCondition(cond string) (bool, error) {
	if cond == "ci" {
		return os.Getenv("CI") != "", nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// setupEnv gives every script a git identity and a clean git config.
func setupEnv(e *testscript.Env) error {
	home, err := os.MkdirTemp("", "wiggum-home-")
	if err != nil {
		return err
	}
	e.Defer(func() { os.RemoveAll(home) })
	e.Setenv("HOME", home)
	e.Setenv("XDG_CONFIG_HOME", home+"/.config")
	e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	e.Setenv("GIT_AUTHOR_NAME", "Test")
	e.Setenv("GIT_AUTHOR_EMAIL", "test@example.com")
	e.Setenv("GIT_COMMITTER_NAME", "Test")
	e.Setenv("GIT_COMMITTER_EMAIL", "test@example.com")
	e.Setenv("GIT_AUTHOR_DATE", "")
	e.Setenv("TERM", "dumb")
	// safe.bareRepository: git 3 refuses git run inside a bare repository
	// without --git-dir, and the scripts look into their servers that way.
	// core.filesRefLockTimeout: a script's own git commands wait for a ref
	// lock that a git of a killed wiggum still holds while it dies, as
	// wiggum's own git commands do (see e2e's TestMain).
	return os.WriteFile(home+"/.gitconfig", []byte("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[safe]\n\tbareRepository = all\n"+
		"[core]\n\tfilesRefLockTimeout = 10000\n"), 0o644)
}
