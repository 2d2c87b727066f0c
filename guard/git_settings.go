package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// gitSetting is one configuration entry a command gives git: key in lower
// case ("alias.ship", "clean.requireforce"); set is false for a bare key,
// which git reads as true.
type gitSetting struct {
	key, value string
	set        bool
}

// gitSettings is the configuration a script gives every git command after
// it: GIT_CONFIG_* variables, the files GIT_CONFIG_GLOBAL and friends
// name, and git config writes. It is kept for the whole command, nested
// shells included, whatever scope the shell gives a variable.
type gitSettings struct {
	list    []gitSetting
	env     map[string]string // GIT_CONFIG_KEY_n / GIT_CONFIG_VALUE_n seen
	unknown string            // why git may read settings the guard cannot see; "" when none
}

func (g *guard) settings() *gitSettings {
	if g.cfg == nil {
		g.cfg = &gitSettings{}
	}
	return g.cfg
}

// lookup returns the last value the settings give key.
func lookup(list []gitSetting, key string) (gitSetting, bool) {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].key == key {
			return list[i], true
		}
	}
	return gitSetting{}, false
}

// gitOff reports whether a boolean setting reads as false to git.
func gitOff(s gitSetting) bool {
	if !s.set {
		return false // a bare key is true
	}
	switch strings.ToLower(strings.TrimSpace(s.value)) {
	case "", "false", "no", "off", "0":
		return true
	}
	return false
}

// gitConfigEnv checks a GIT_CONFIG* variable the command sets: each entry
// it gives git is judged as git -c KEY=VALUE is, and a file it names is
// read and judged entry by entry.
func (w *walk) gitConfigEnv(name, value string) {
	cfg := w.g.settings()
	switch {
	case name == "GIT_CONFIG_GLOBAL" || name == "GIT_CONFIG_SYSTEM" || name == "GIT_CONFIG":
		w.gitConfigFile(name, value, w.g.p.Cwd, 0)
	case name == "GIT_CONFIG_PARAMETERS":
		list, ok := parseConfigParameters(value)
		if !ok {
			cfg.unknown = fmt.Sprintf("%s=%s gives git settings wiggum's guard cannot read", name, printable(value))
			return
		}
		for _, s := range list {
			w.applySetting(name, s)
		}
	case strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_"):
		if cfg.env == nil {
			cfg.env = map[string]string{}
		}
		cfg.env[name] = value
		n := name[strings.LastIndexByte(name, '_')+1:]
		key, okKey := cfg.env["GIT_CONFIG_KEY_"+n]
		v, okValue := cfg.env["GIT_CONFIG_VALUE_"+n]
		if !okKey || !okValue {
			return // judged when the pair is complete
		}
		if strings.Contains(key, dynamic) || strings.Contains(v, dynamic) {
			cfg.unknown = fmt.Sprintf("GIT_CONFIG_KEY_%s=%s gives git a setting only known at run time", n, printable(key))
			return
		}
		w.applySetting("GIT_CONFIG_KEY_"+n, gitSetting{key: strings.ToLower(key), value: v, set: true})
	}
}

// applySetting judges one setting a command gives git, wherever it comes
// from (src names it), as git -c KEY=VALUE is judged, and remembers it
// for the git commands after it.
func (w *walk) applySetting(src string, s gitSetting) {
	cfg := w.g.settings()
	cfg.list = append(cfg.list, s)
	w.judgeSetting(src, s)
	if includeKey(s.key) {
		w.gitConfigFile(src, s.value, w.g.p.Cwd, 1)
	}
}

// judgeSetting is the rule for one setting given to a single git command
// (-c) or to every git command after it (GIT_CONFIG_*).
func (w *walk) judgeSetting(src string, s gitSetting) {
	key, v := s.key, s.value
	if strings.HasPrefix(key, "alias.") {
		w.gitAlias(v)
		w.g.verdict(Ask, "%s defines the git alias %s; wiggum's guard cannot see what it runs", src, strings.TrimPrefix(key, "alias."))
	}
	if key == "core.hookspath" {
		w.g.verdict(Deny, "%s sets core.hooksPath, which bypasses wiggum's git hooks (the commit journal and push guard); run git without it", src)
	}
	if CommandKey(key, v) && !strings.HasPrefix(key, "alias.") && !strings.HasPrefix(key, "include") {
		// Git runs it in this one command: judged as the shell it is.
		w.g.script(v, w.depth+1)
	}
	if expiryKey(key) && pruneNow(v) {
		w.g.verdict(Deny, "%s sets %s=%s, which makes git delete unreachable objects or reflogs at once; not allowed during a wiggum session", src, key, v)
	}
}

// gitConfigFile judges the settings in a git config file that git reads
// because of src (GIT_CONFIG_GLOBAL=FILE, include.path=FILE): the text the
// command itself writes there, or the file on disk. A file the guard
// cannot read - not there yet, so the command may write it, or named at
// run time - leaves the settings unknown.
func (w *walk) gitConfigFile(src, file, base string, depth int) {
	cfg := w.g.settings()
	text, why := w.gitConfigText(file, base)
	if why != "" {
		// Such a file may hold anything git -c could: core.hooksPath, an
		// alias, a command git runs.
		cfg.unknown = fmt.Sprintf("%s=%s makes git read %s", src, printable(file), why)
		w.g.verdict(Ask, "%s, which may switch wiggum's git hooks off or make git run commands; wiggum's guard cannot tell what it sets", cfg.unknown)
		return
	}
	list, ok := parseGitConfig(text)
	if !ok {
		cfg.unknown = fmt.Sprintf("%s=%s makes git read a config file wiggum's guard cannot parse", src, printable(file))
		return
	}
	from := fmt.Sprintf("%s=%s", src, printable(file))
	for _, s := range list {
		cfg.list = append(cfg.list, s)
		w.judgeSetting(from, s)
		if includeKey(s.key) {
			if depth >= maxIncludes {
				cfg.unknown = fmt.Sprintf("%s includes config files more than %d deep", from, maxIncludes)
				return
			}
			w.gitConfigFile(from, s.value, path.Dir(w.g.resolve(base, file)), depth+1)
		}
	}
}

// includeKey reports whether git reads the file a setting names as more
// configuration: include.path, includeIf.COND.path.
func includeKey(key string) bool {
	return key == "include.path" || strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")
}

// maxIncludes is how deep the guard follows config files including others.
const maxIncludes = 4

// gitConfigText returns the text of a config file git is told to read, or
// why the guard cannot know it.
func (w *walk) gitConfigText(file, base string) (text, why string) {
	if file == "" || strings.Contains(file, dynamic) {
		return "", "a file only known at run time"
	}
	if file == "/dev/null" {
		return "", ""
	}
	if t, ok := w.writtenFile(file); ok {
		return t, ""
	}
	abs := w.g.resolve(base, file)
	if abs == "" {
		return "", "a file wiggum's guard cannot locate"
	}
	if t, ok := w.writtenFile(abs); ok {
		return t, ""
	}
	if w.g.homeGitConfig(abs) || abs == "/etc/gitconfig" {
		return "", "" // git's own choice: nothing the person did not set
	}
	return w.g.readConfig(abs)
}

// readConfig reads a git config file through the policy.
func (g *guard) readConfig(abs string) (text, why string) {
	if g.p.ReadFile == nil {
		return "", "a file wiggum's guard does not read"
	}
	g.left.reads--
	if g.left.reads < 0 {
		return "", "more files than wiggum's guard reads"
	}
	b, err := g.p.ReadFile(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "a file that does not exist yet (the command may write it first)"
	case err != nil:
		return "", fmt.Sprintf("a file wiggum's guard cannot read (%v)", err)
	case len(b) > MaxScript:
		return "", fmt.Sprintf("a file over %d bytes", MaxScript)
	}
	return string(b), ""
}

// gitAliasCall judges a git subcommand git does not have: an alias, or an
// external git-NAME program (git lfs, git flow). An alias the guard can
// read - in the command's settings, the repository's config or the
// person's - is judged as what it runs; when the command gives git
// settings the guard cannot read, it is asked about.
func (w *walk) gitAliasCall(sub string, inline []gitSetting, args []string) {
	key := "alias." + strings.ToLower(sub)
	if _, ok := lookup(inline, key); ok {
		return // judged with the -c that defines it
	}
	if s, ok := lookup(w.g.settings().list, key); ok {
		w.gitAliasRun(sub, s.value, args)
		return
	}
	for _, s := range w.g.diskConfig() {
		if s.key == key {
			w.gitAliasRun(sub, s.value, args)
			return
		}
	}
	if why := w.g.settings().unknown; why != "" {
		w.g.verdict(Ask, "git %s may be a git alias, and %s; wiggum's guard cannot tell what it runs", sub, why)
	}
}

// gitAliasRun judges what git runs for the alias sub with the arguments
// args: shell code for "!CODE", else a git command line.
func (w *walk) gitAliasRun(sub, value string, args []string) {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
		if strings.Contains(a, dynamic) {
			quoted[i] = "$__wiggum_unknown"
		}
	}
	line := strings.Join(quoted, " ")
	if code, ok := strings.CutPrefix(value, "!"); ok {
		w.g.script(code+" "+line, w.depth+1)
		return
	}
	w.g.script("git "+value+" "+line, w.depth+1)
}

// diskConfig returns the settings in the repository's config and the
// person's, read once per check.
func (g *guard) diskConfig() []gitSetting {
	if g.disk != nil {
		return *g.disk
	}
	var list []gitSetting
	g.disk = &list
	var files []string
	if g.p.Root != "" {
		files = append(files, path.Join(g.p.Root, ".git", "config"))
	}
	if g.p.Home != "" {
		files = append(files, path.Join(g.p.Home, ".gitconfig"), path.Join(g.p.Home, ".config/git/config"))
	}
	for _, f := range files {
		text, why := g.readConfig(f)
		if why != "" {
			continue
		}
		if l, ok := parseGitConfig(text); ok {
			list = append(list, l...)
		}
	}
	return list
}

// gitConfigWrite remembers a setting git config writes to the repository
// for the git commands after it in the same command.
func (w *walk) gitConfigWrite(key, value string) {
	cfg := w.g.settings()
	cfg.list = append(cfg.list, gitSetting{key: strings.ToLower(key), value: value, set: true})
}

// parseConfigParameters reads GIT_CONFIG_PARAMETERS: single-quoted
// 'key=value' or 'key'='value' items separated by spaces.
func parseConfigParameters(s string) ([]gitSetting, bool) {
	if strings.Contains(s, dynamic) {
		return nil, false
	}
	var out []gitSetting
	i := 0
	quoted := func() (string, bool) {
		var b strings.Builder
		for i < len(s) && s[i] == '\'' {
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
			if i+1 < len(s) && s[i] == '\\' && s[i+1] == '\'' {
				b.WriteByte('\'') // '\'' inside a value
				i += 2
				continue
			}
			if i < len(s) && s[i] == '\\' {
				return "", false
			}
		}
		return b.String(), true
	}
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			return out, true
		}
		if s[i] != '\'' {
			return nil, false
		}
		k, ok := quoted()
		if !ok {
			return nil, false
		}
		if i < len(s) && s[i] == '=' {
			i++
			v, ok := quoted()
			if !ok {
				return nil, false
			}
			out = append(out, gitSetting{key: strings.ToLower(k), value: v, set: true})
			continue
		}
		key, v, set := strings.Cut(k, "=")
		out = append(out, gitSetting{key: strings.ToLower(key), value: v, set: set})
	}
}

// parseGitConfig reads the settings in a git config file; false when git
// would refuse it as malformed (and the guard should not guess).
func parseGitConfig(s string) ([]gitSetting, bool) {
	var out []gitSetting
	section := ""
	i := 0
	for i < len(s) {
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#' || c == ';':
			i = lineEnd(s, i)
		case c == '[':
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			head, ok := configSection(s[i : i+end])
			if !ok {
				return nil, false
			}
			section = head
			i = lineEnd(s, i)
		default:
			j := i
			for j < len(s) && (isAlnum(s[j]) || s[j] == '-') {
				j++
			}
			if j == i || section == "" {
				return nil, false
			}
			name := strings.ToLower(s[i:j])
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j == len(s) || s[j] == '\n' || s[j] == '\r' || s[j] == '#' || s[j] == ';' {
				out = append(out, gitSetting{key: section + "." + name})
				i = lineEnd(s, j)
				continue
			}
			if s[j] != '=' {
				return nil, false
			}
			v, next, ok := configValue(s, j+1)
			if !ok {
				return nil, false
			}
			out = append(out, gitSetting{key: section + "." + name, value: v, set: true})
			i = next
		}
	}
	return out, true
}

// configSection reads a section header line: [core], [alias],
// [remote "origin"], [branch.main]; the name is in lower case.
func configSection(line string) (string, bool) {
	end := strings.LastIndexByte(line, ']')
	if end < 0 {
		return "", false
	}
	inner := line[1:end]
	name, sub, hasSub := strings.Cut(inner, " ")
	if !hasSub {
		return strings.ToLower(strings.TrimSpace(inner)), true
	}
	sub = strings.TrimSpace(sub)
	if len(sub) < 2 || sub[0] != '"' || sub[len(sub)-1] != '"' {
		return "", false
	}
	sub = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(sub[1 : len(sub)-1])
	return strings.ToLower(name + "." + sub), true
}

// configValue reads a value from s[i:] to the end of its line, with git's
// quotes, escapes and continuation lines; it returns where the next line
// starts.
func configValue(s string, i int) (string, int, bool) {
	var b strings.Builder
	quoted := false
	space := ""
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\n' && !quoted:
			return b.String(), i + 1, true
		case c == '\n':
			return "", 0, false
		case !quoted && (c == '#' || c == ';'):
			return b.String(), lineEnd(s, i), true
		case !quoted && (c == ' ' || c == '\t' || c == '\r'):
			if b.Len() > 0 {
				space += string(c)
			}
			i++
			continue
		case c == '"':
			quoted = !quoted
			i++
			continue
		case c == '\\':
			if i+1 == len(s) {
				return "", 0, false
			}
			i++
			switch s[i] {
			case '\n':
				i++
				continue
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case '\\', '"':
				c = s[i]
			default:
				return "", 0, false
			}
		}
		b.WriteString(space)
		space = ""
		b.WriteByte(c)
		i++
	}
	if quoted {
		return "", 0, false
	}
	return b.String(), i, true
}

// lineEnd returns the index after the end of the line holding s[i].
func lineEnd(s string, i int) int {
	if n := strings.IndexByte(s[i:], '\n'); n >= 0 {
		return i + n + 1
	}
	return len(s)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
