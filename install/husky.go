package install

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/hooks"
	"github.com/wiggum-dev/wiggum/internal/git"
)

// husky (9) keeps a project's git hooks in .husky/_ (core.hooksPath): one
// stub per hook that sources the h beside it, which runs .husky/<hook>.
// It writes every stub again each time it runs - the project's npm
// install runs it (its prepare script) - over wiggum's shims, which
// 'wiggum install --git --force' put there in front of husky's stubs
// (kept as NAME.old). That is no attack on the hooks: a stub runs only
// the project's tracked .husky/<hook>.

// huskyStub reports whether data is a stub husky writes: a shebang and a
// line that sources the h in its own directory.
func huskyStub(data []byte) bool {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "#!") {
		return false
	}
	switch strings.TrimSpace(lines[1]) {
	case `. "$(dirname "$0")/h"`, `. "$(dirname -- "$0")/h"`, `. "${0%/*}/h"`:
		return true
	}
	return false
}

// HuskyRewrote returns after as if husky had not written its stubs over
// g's shims, and the names of the shims it wrote over (sorted): the
// caller puts them back (Restore) without blaming anyone.
func (g GitRails) HuskyRewrote(after GitRails) (GitRails, []string) {
	var names []string
	for name := range g.shims {
		if _, kept := after.shims[name]; !kept && huskyStub(after.others[name]) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return after, nil
	}
	slices.Sort(names)
	fixed := after
	fixed.shims, fixed.others = maps.Clone(after.shims), maps.Clone(after.others)
	for _, name := range names {
		fixed.shims[name] = g.shims[name]
		delete(fixed.others, name)
	}
	return fixed, names
}

// RepairHusky puts wiggum's shims back where husky wrote its stubs over
// them since 'wiggum install --git': the hook is husky's stub and NAME.old,
// which the install kept, is one too. It returns the hooks it put back.
func RepairHusky(repo *git.Repo) ([]string, error) {
	var fixed []string
	for _, name := range hooks.GitHooks {
		path := filepath.Join(repo.HooksDir, name)
		have, err := os.ReadFile(path)
		if err != nil || !huskyStub(have) {
			continue
		}
		if old, err := os.ReadFile(path + ".old"); err != nil || !huskyStub(old) {
			continue
		}
		if err := renameio.WriteFile(path, shim(name, fallbackBinary(), chainHusky), 0o755); err != nil {
			return fixed, err
		}
		fixed = append(fixed, name)
	}
	return fixed, nil
}
