package guard

import "strings"

// make runs a Makefile's recipes through a shell: `make publish` runs
// whatever the publish rule holds, where the guard saw only "make
// publish". The recipes of the goals (and of their prerequisites) are read
// from the Makefile and judged as shell, make's own variables standing
// for plain words and $(shell ...) for the command it runs.

// maxMakeRules bounds how many rules one make command's goals reach.
const maxMakeRules = 64

// makeGoals judges the recipes `make ARGS` runs.
func (w *walk) makeGoals(rest []string) {
	dir, file := "", ""
	var goals []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-C" || a == "--directory":
			if i+1 < len(rest) {
				dir = rest[i+1]
				i++
			}
		case strings.HasPrefix(a, "-C") && len(a) > 2:
			dir = a[2:]
		case strings.HasPrefix(a, "--directory="):
			dir = strings.TrimPrefix(a, "--directory=")
		case a == "-f" || a == "--file" || a == "--makefile":
			if i+1 < len(rest) {
				file = rest[i+1]
				i++
			}
		case strings.HasPrefix(a, "-f") && len(a) > 2:
			file = a[2:]
		case strings.HasPrefix(a, "-"), strings.Contains(a, "="):
		default:
			goals = append(goals, a)
		}
	}
	names := []string{"GNUmakefile", "makefile", "Makefile"}
	if file != "" {
		names = []string{file}
	}
	for _, n := range names {
		if dir != "" && !strings.HasPrefix(n, "/") {
			n = strings.TrimSuffix(dir, "/") + "/" + n
		}
		if w.judgeScripts(n, func(g *guard, text string) {
			for _, line := range makeRecipes(text, goals) {
				g.script(line, w.depth+1)
			}
		}) {
			return
		}
	}
}

// makeRecipes lists the recipe lines a Makefile runs for goals (its first
// rule's when there are none) and their prerequisites, with make's
// variables put as words.
func makeRecipes(text string, goals []string) []string {
	type rule struct {
		prereqs []string
		recipe  []string
	}
	rules := map[string]*rule{}
	first := ""
	var cur []*rule
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "\t") {
			for _, r := range cur {
				r.recipe = append(r.recipe, line[1:])
			}
			continue
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		cur = nil
		colon := strings.IndexByte(line, ':')
		if colon < 0 || strings.HasPrefix(line[colon:], ":=") || strings.HasPrefix(line[colon:], "::=") ||
			strings.ContainsAny(line[:colon], "=$") {
			continue // an assignment, or a rule whose targets make computes
		}
		deps, inline, _ := strings.Cut(strings.TrimLeft(line[colon+1:], ":"), ";")
		for _, t := range strings.Fields(line[:colon]) {
			if strings.Contains(t, "%") {
				continue // pattern rules are not followed
			}
			r := rules[t]
			if r == nil {
				r = &rule{}
				rules[t] = r
			}
			r.prereqs = append(r.prereqs, strings.Fields(deps)...)
			if strings.TrimSpace(inline) != "" {
				r.recipe = append(r.recipe, inline)
			}
			cur = append(cur, r)
			if first == "" && !strings.HasPrefix(t, ".") {
				first = t
			}
		}
	}
	if len(goals) == 0 && first != "" {
		goals = []string{first}
	}
	var out []string
	seen := map[string]bool{}
	for len(goals) > 0 && len(seen) < maxMakeRules {
		g := goals[0]
		goals = goals[1:]
		r := rules[g]
		if seen[g] || r == nil {
			continue
		}
		seen[g] = true
		goals = append(goals, r.prereqs...)
		for _, l := range r.recipe {
			if l = strings.TrimLeft(strings.TrimSpace(l), "@+-"); l != "" {
				out = append(out, makeWords(l))
			}
		}
	}
	return out
}

// makeWords puts a recipe line as the shell sees it: $$ is a $, make's
// variables ($(CC), ${FLAGS}, $@) plain words, $(shell CMD) the command
// substitution it is.
func makeWords(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		next := s[i+1]
		switch next {
		case '$':
			b.WriteByte('$')
			i++
		case '(', '{':
			closer := byte(')')
			if next == '{' {
				closer = '}'
			}
			depth, j := 0, i+1
			for ; j < len(s); j++ {
				if s[j] == next {
					depth++
				} else if s[j] == closer {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			inner := s[i+2 : min(j, len(s))]
			if cmd, ok := strings.CutPrefix(inner, "shell "); ok {
				b.WriteString("$(" + makeWords(cmd) + ")")
			} else if inner == "MAKE" {
				b.WriteString("make") // a recursive make: its Makefile is read too
			} else {
				b.WriteString("MAKEVAR")
			}
			i = j
		default:
			b.WriteString("MAKEVAR")
			i++
		}
	}
	return b.String()
}
