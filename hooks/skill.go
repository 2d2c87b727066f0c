package hooks

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/guard"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// skillTools load a skill or a custom command (Claude Code's Skill, and
// its SlashCommand before it); agentTools start a subagent, whose
// definition (.claude/agents/NAME.md) may declare hooks of its own.
var (
	skillTools = map[string]bool{"Skill": true, "SlashCommand": true}
	agentTools = map[string]bool{"Agent": true, "Task": true}
)

// A skill's or command's file may hold shell commands that Claude Code
// runs as the file loads, to put their output in the text the model
// reads: inline as !`command`, or as a fenced block opened with ```!.
// They run with no tool call and so with no hook: Claude Code 2.1.332 ran
// a project skill's !`git clean -fdx` and deleted wiggum's state and the
// user's untracked files. The guard judges them when the skill tool is
// called, and denies the call when it would deny one of them.
var (
	inlineBang = lazy("!`([^`\n]+)`")
	fencedBang = lazy("(?ms)^[ \t]*```!\\s*$\n(.*?)^[ \t]*```[ \t]*$")
)

// maxSkillFile bounds what is read of one skill file.
const maxSkillFile = 1 << 20

// guardSkill judges the commands the skill ev loads would run, or, for a
// subagent, the hooks its definition declares.
func guardSkill(ev Event, root string, opts Options) Response {
	if !guardOn(root, opts) {
		return Response{}
	}
	name := skillName(ev.Skill)
	if name == "" {
		return Response{}
	}
	files, what := skillFiles(name, ev.Cwd, root), "skill"
	if agentTools[ev.ToolName] {
		files, what = agentFiles(name, ev.Cwd, root), "subagent"
	}
	for _, file := range files {
		for _, cmd := range skillCommands(file) {
			one := ev
			// The commands run in the session's directory.
			one.Shell, one.Command, one.Dir = true, cmd, ""
			r := guardCommand(one, root, opts)
			if r.Decision == guard.Allow {
				continue
			}
			rel := file
			if r, err := filepath.Rel(root, file); err == nil && !strings.HasPrefix(r, "..") {
				rel = r
			}
			r.Reason = "wiggum: the " + what + " " + name + " (" + rel + ") runs `" + oneLine(strings.ReplaceAll(strings.TrimSpace(cmd), "\n", "; ")) + "` as it loads or as its own hook, where no hook sees it: " +
				strings.TrimPrefix(r.Reason, "wiggum: ")
			return r
		}
	}
	return Response{}
}

// skillName is the skill a tool input names: "tidy" of "/tidy some args".
func skillName(s string) string {
	s = strings.TrimPrefix(strings.TrimSpace(s), "/")
	if i := strings.IndexAny(s, " \t\n"); i >= 0 {
		s = s[:i]
	}
	if s == "" || strings.Contains(s, "..") || strings.ContainsAny(s, "/\\\x00") {
		return ""
	}
	return s
}

// skillFiles lists the files that may define skill name: a skill
// (.claude/skills/NAME/SKILL.md, or one whose front matter names it) or a
// custom command (.claude/commands/NAME.md, a:b in commands/a/b.md), in
// the .claude directories of cwd and its parents up to the repository's
// root, and of the home directory. Plugins' skills ("plugin:name") are the
// user's installs, not the project's, and are not looked for.
func skillFiles(name, cwd, root string) []string {
	var files []string
	for _, d := range claudeDirs(cwd, root) {
		if !strings.Contains(name, ":") {
			files = append(files, named(name, filepath.Join(d, "skills", name, "SKILL.md"), filepath.Join(d, "skills", "*", "SKILL.md"))...)
		}
		if p := filepath.Join(d, "commands", filepath.FromSlash(strings.ReplaceAll(name, ":", "/"))+".md"); regular(p) {
			files = append(files, p)
		}
	}
	return files
}

// agentFiles lists the files that may define subagent name:
// .claude/agents/NAME.md, or one whose front matter names it, in the
// .claude directories skillFiles searches.
func agentFiles(name, cwd, root string) []string {
	var files []string
	for _, d := range claudeDirs(cwd, root) {
		files = append(files, named(name, filepath.Join(d, "agents", name+".md"), filepath.Join(d, "agents", "*.md"))...)
	}
	return files
}

// named lists the definitions of name: the file at own (the path its name
// gives it) when it is a regular file, and every other file matching
// pattern whose front matter names it.
func named(name, own, pattern string) []string {
	var files []string
	if regular(own) {
		files = append(files, own)
	}
	others, _ := filepath.Glob(pattern)
	for _, f := range others {
		if f != own && frontName(f) == name {
			files = append(files, f)
		}
	}
	return files
}

// claudeDirs are the .claude directories of cwd and its parents up to the
// repository's root, and the user's Claude Code directory.
func claudeDirs(cwd, root string) []string {
	var dirs []string
	for d := filepath.Clean(cwd); d != "" && cwd != ""; d = filepath.Dir(d) {
		dirs = append(dirs, filepath.Join(d, ".claude"))
		if d == root || root == "" || d == filepath.Dir(d) {
			break
		}
	}
	// The user's: Claude Code reads them from CLAUDE_CONFIG_DIR when it
	// is set (a skill there ran unjudged), else from ~/.claude.
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		dirs = append(dirs, d)
	} else if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".claude"))
	}
	return dirs
}

func regular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// frontHookCommands reads the command: values in a skill file's front
// matter - its hooks' commands - plain, quoted, or as a block scalar.
func frontHookCommands(data string) []string {
	lines := strings.Split(frontMatter(data), "\n")
	var cmds []string
	for i, line := range lines {
		at := strings.Index(line, "command:")
		if at < 0 || (at > 0 && !strings.ContainsRune(" \t{,-", rune(line[at-1]))) {
			continue
		}
		v := strings.TrimSpace(line[at+len("command:"):])
		switch {
		case strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
			indent := len(line) - len(strings.TrimLeft(line, " \t"))
			var block []string
			for _, next := range lines[i+1:] {
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " \t")) <= indent {
					break
				}
				block = append(block, strings.TrimSpace(next))
			}
			v = strings.Join(block, "\n")
		case strings.HasPrefix(v, `"`):
			if end := closingQuote(v); end > 0 {
				if u, err := strconv.Unquote(v[:end+1]); err == nil {
					v = u
				} else {
					v = v[1:end]
				}
			}
		case strings.HasPrefix(v, "'"):
			if end := strings.Index(v[1:], "'"); end >= 0 {
				v = strings.ReplaceAll(v[1:end+1], "''", "'")
			}
		default:
			v, _, _ = strings.Cut(v, " #")
			v = strings.TrimRight(v, " ,}")
		}
		if v = strings.TrimSpace(v); v != "" {
			cmds = append(cmds, v)
		}
	}
	return cmds
}

// closingQuote is the index of the double quote that ends the quoted
// string s starts with, -1 if none.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// frontMatter is the front matter of a skill file's content: what lies
// between its opening --- and the next; "" when it opens with none.
func frontMatter(data string) string {
	rest, ok := strings.CutPrefix(data, "---")
	if !ok {
		return ""
	}
	head, _, _ := strings.Cut(rest, "\n---")
	return head
}

// frontName is the name: field of a skill file's front matter.
func frontName(path string) string {
	for _, line := range strings.Split(frontMatter(readSkill(path)), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "name:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// skillCommands are the shell commands a skill file runs: as it loads,
// and as hooks of its own while it is active (front matter hooks, run by
// Claude Code like the settings' hooks: their commands, too, pass no
// PreToolUse hook).
func skillCommands(path string) []string {
	data := readSkill(path)
	cmds := frontHookCommands(data)
	for _, m := range fencedBang.get().FindAllStringSubmatch(data, -1) {
		cmds = append(cmds, m[1])
	}
	for _, m := range inlineBang.get().FindAllStringSubmatch(data, -1) {
		cmds = append(cmds, m[1])
	}
	return cmds
}

// readSkill reads at most maxSkillFile bytes of a regular file
// (statefile.OpenRegular: a FIFO in a skill's place cannot hang the hook).
func readSkill(path string) string {
	f, err := statefile.OpenRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxSkillFile))
	return string(data)
}
