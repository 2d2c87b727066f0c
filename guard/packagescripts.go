package guard

import (
	"encoding/json"
	"path"
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

// packageScripts judges the scripts a package manager's command runs: in
// the package.json of the directory it runs in, or of the workspaces it
// names (npm -w, pnpm --filter, yarn workspace) or takes all of (npm
// --workspaces, pnpm -r, yarn workspaces foreach).
func (w *walk) packageScripts(base string, rest []string) {
	sel := selectPackages(base, rest)
	names := scriptNames(base, sel.args)
	if len(names) == 0 {
		return
	}
	judge := func(g *guard, text string) {
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
	}
	if sel.root || (!sel.all && len(sel.named) == 0) {
		w.judgeScripts(path.Join(sel.dir, "package.json"), judge)
	}
	if sel.all || len(sel.named) > 0 {
		for _, d := range w.workspaceDirs(sel) {
			w.judgeScripts(path.Join(d, "package.json"), judge)
		}
	}
}

// pkgSelection is what a package manager's arguments say of where it runs
// scripts.
type pkgSelection struct {
	dir   string   // --prefix, -C, --dir, --cwd: the project's directory
	named []string // -w X, --filter X, yarn workspace X
	all   bool     // --workspaces, -r, yarn workspaces foreach
	root  bool     // the project's own package.json too
	args  []string // the rest, for scriptNames
}

// selectPackages reads the workspace and directory options of npm, pnpm,
// yarn and bun out of rest.
func selectPackages(base string, rest []string) pkgSelection {
	var sel pkgSelection
	value := func(i *int, a, long string) (string, bool) {
		if v, ok := strings.CutPrefix(a, long+"="); ok && long != "" {
			return v, true
		}
		if *i+1 < len(rest) {
			*i++
			return rest[*i], true
		}
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			sel.args = append(sel.args, rest[i:]...)
			break
		}
		key, _, _ := strings.Cut(a, "=")
		switch {
		case base == "npm" && (a == "-w" || key == "--workspace"):
			if v, ok := value(&i, a, "--workspace"); ok {
				sel.named = append(sel.named, v)
			}
		case base == "npm" && (a == "-ws" || a == "--workspaces"):
			sel.all = true
		case base == "npm" && a == "--include-workspace-root":
			sel.root = true
		case base == "npm" && key == "--prefix",
			base == "pnpm" && (a == "-C" || key == "--dir"),
			(base == "yarn" || base == "bun") && key == "--cwd":
			if v, ok := value(&i, a, key); ok {
				sel.dir = v
			}
		case (base == "pnpm" || base == "bun") && (a == "-F" || key == "--filter"):
			if v, ok := value(&i, a, "--filter"); ok {
				sel.named = append(sel.named, v)
			}
		case base == "pnpm" && (a == "-r" || a == "--recursive"):
			sel.all = true
		case base == "pnpm" && (a == "-w" || a == "--workspace-root"):
			sel.root = true
		default:
			sel.args = append(sel.args, a)
		}
	}
	if base == "yarn" {
		// yarn workspace NAME CMD...; yarn workspaces foreach [...] run CMD
		if first := firstWord(sel.args); first >= 0 {
			switch sel.args[first] {
			case "workspace":
				if first+1 < len(sel.args) {
					sel.named = append(sel.named, sel.args[first+1])
					sel.args = sel.args[first+2:]
				}
			case "workspaces":
				if first+1 < len(sel.args) && sel.args[first+1] == "foreach" {
					sel.all = true
					rest := sel.args[first+2:]
					sel.args = nil
					for j, x := range rest {
						if x == "run" || x == "exec" {
							sel.args = rest[j:]
							break
						}
					}
				}
			}
		}
	}
	if len(sel.named) > 0 || sel.all {
		for _, n := range sel.named {
			if strings.ContainsAny(n, "*") {
				sel.all = true // a pattern: every workspace it may match
			}
		}
	}
	return sel
}

// PackageCommand is the arguments of a package manager's command (base:
// npm, pnpm, yarn or bun) without its workspace and directory options and
// their values - npm --prefix web test, pnpm --filter app test, yarn
// workspace app test are each "test" - for the test-run hook to find the
// script it runs.
func PackageCommand(base string, rest []string) []string {
	return selectPackages(base, rest).args
}

// PackageDir is the directory option of a package manager's command
// (npm --prefix, pnpm -C/--dir, yarn and bun --cwd), "" when it has
// none: where the test-run hook places the script it runs.
func PackageDir(base string, rest []string) string {
	return selectPackages(base, rest).dir
}

// firstWord is the index of the first argument that is no option, -1.
func firstWord(args []string) int {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return i
		}
	}
	return -1
}

// workspaceDirs lists the directories, from the command's, of the
// workspaces sel names or takes all of: from the workspaces of the
// project's package.json (an array, or packages in an object) and its
// pnpm-workspace.yaml. A name is a directory (packages/app, ./app), or a
// package's name matched against its directory's last element (the
// usual layout), then against each workspace package.json's name. A
// pattern's directories are listed through Policy.ReadDir; reads stop at
// the guard's budget without asking (the command's own package.json was
// judged already).
func (w *walk) workspaceDirs(sel pkgSelection) []string {
	patterns := w.workspacePatterns(sel.dir)
	var out []string
	seen := map[string]bool{}
	add := func(d string) {
		d = path.Clean(d)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	var listed []string
	listAll := func() []string {
		if listed != nil {
			return listed
		}
		listed = []string{}
		for _, p := range patterns {
			parent, star := strings.CutSuffix(p, "/*")
			switch {
			case strings.Contains(p, "*") && !star, strings.Contains(parent, "*"):
				continue // ** and inner patterns are not followed
			case !star:
				listed = append(listed, path.Join(sel.dir, p))
				continue
			}
			for _, name := range w.listDir(path.Join(sel.dir, parent)) {
				listed = append(listed, path.Join(sel.dir, parent, name))
			}
		}
		return listed
	}
	if sel.all {
		for _, d := range listAll() {
			add(d)
		}
	}
	for _, n := range sel.named {
		n = strings.Trim(strings.TrimSuffix(strings.TrimPrefix(n, "..."), "..."), "{}")
		if n == "" || strings.Contains(n, "*") {
			continue
		}
		if strings.HasPrefix(n, ".") || (strings.Contains(n, "/") && !strings.HasPrefix(n, "@")) {
			add(path.Join(sel.dir, n))
			continue
		}
		last := n[strings.LastIndexByte(n, '/')+1:]
		found := false
		for _, d := range listAll() {
			if path.Base(d) == last {
				add(d)
				found = true
			}
		}
		if found {
			continue
		}
		for _, d := range listAll() {
			if w.g.left.reads <= 1 {
				break
			}
			if text, ok := w.fileText(path.Join(d, "package.json")); ok {
				var pkg struct {
					Name string `json:"name"`
				}
				if json.Unmarshal([]byte(text), &pkg) == nil && pkg.Name == n {
					add(d)
				}
			}
		}
	}
	if len(out) > maxWorkspaces {
		out = out[:maxWorkspaces]
	}
	return out
}

// maxWorkspaces bounds the workspaces whose scripts one command's judging
// reads.
const maxWorkspaces = 16

// workspacePatterns reads the workspace patterns of the project in dir.
func (w *walk) workspacePatterns(dir string) []string {
	var patterns []string
	if text, ok := w.fileText(path.Join(dir, "package.json")); ok {
		var pkg struct {
			Workspaces json.RawMessage `json:"workspaces"`
		}
		if json.Unmarshal([]byte(text), &pkg) == nil && len(pkg.Workspaces) > 0 {
			var list []string
			var obj struct {
				Packages []string `json:"packages"`
			}
			if json.Unmarshal(pkg.Workspaces, &list) == nil {
				patterns = append(patterns, list...)
			} else if json.Unmarshal(pkg.Workspaces, &obj) == nil {
				patterns = append(patterns, obj.Packages...)
			}
		}
	}
	if text, ok := w.fileText(path.Join(dir, "pnpm-workspace.yaml")); ok {
		in := false
		for _, line := range strings.Split(text, "\n") {
			t := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "packages:"):
				in = true
			case in && strings.HasPrefix(t, "- "):
				p := strings.Trim(strings.TrimSpace(t[2:]), `"'`)
				if !strings.HasPrefix(p, "!") {
					patterns = append(patterns, p)
				}
			case in && t != "" && !strings.HasPrefix(t, "#"):
				in = false
			}
		}
	}
	for i, p := range patterns {
		patterns[i] = strings.TrimSuffix(strings.TrimPrefix(p, "./"), "/")
	}
	return patterns
}

// listDir lists the directories in dir (relative to the command's first
// directory) through Policy.ReadDir; nil when it cannot.
func (w *walk) listDir(dir string) []string {
	if w.g.p.ReadDir == nil || len(w.dirs) == 0 {
		return nil
	}
	p := w.g.resolve(w.dirs[0], dir)
	if p == "" {
		return nil
	}
	names, err := w.g.p.ReadDir(p)
	if err != nil {
		return nil
	}
	return names
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
