package guard

import (
	"encoding/json"
	"slices"
	"strings"
)

// A package manager runs the project's package.json scripts through a
// shell: `npm test` runs scripts.test (and pretest, posttest), whatever it
// holds - a git push, a git clean - where the guard saw only "npm test".
// The scripts the command runs are read from package.json in the
// command's directory and judged as the shell they are.

// packageManagers run package.json scripts.
var packageManagers = map[string]bool{"npm": true, "pnpm": true, "yarn": true}

// lifecycle are the scripts an install runs.
var lifecycle = []string{"preinstall", "install", "postinstall", "prepare"}

// packageScripts judges the scripts a package manager's command runs.
func (w *walk) packageScripts(base string, rest []string) {
	names := scriptNames(base, rest)
	if len(names) == 0 {
		return
	}
	w.judgeScripts("package.json", func(g *guard, text string) {
		var pkg struct {
			Scripts map[string]any `json:"scripts"`
		}
		if json.Unmarshal([]byte(text), &pkg) != nil {
			return
		}
		for _, n := range names {
			if code, ok := pkg.Scripts[n].(string); ok {
				g.script(code, w.depth+1)
			}
		}
	})
}

// scriptNames are the package.json scripts a command runs: the named one
// with its pre and post scripts, the lifecycle scripts of an install.
func scriptNames(base string, rest []string) []string {
	var args []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		args = append(args, a)
	}
	if len(args) == 0 {
		if base == "yarn" {
			return lifecycle // bare yarn installs
		}
		return nil
	}
	sub := args[0]
	name := ""
	switch sub {
	case "run", "run-script", "rum", "urn":
		if len(args) < 2 {
			return nil
		}
		name = args[1]
	case "test", "t", "tst", "start", "stop", "restart":
		name = map[string]string{"t": "test", "tst": "test"}[sub]
		if name == "" {
			name = sub
		}
	case "install", "i", "ci", "add", "in", "isntall":
		return lifecycle
	default:
		// yarn NAME and pnpm NAME run the script NAME when it is not one
		// of their own commands; npm does not.
		if base == "npm" || slices.Contains([]string{"exec", "dlx", "x", "create", "init", "why", "list", "ls", "info", "view", "outdated", "remove", "rm", "uninstall", "up", "upgrade", "update", "link", "unlink", "pack", "publish", "config", "cache", "audit", "bin", "root", "help"}, sub) {
			return nil
		}
		name = sub
	}
	return []string{"pre" + name, name, "post" + name}
}
