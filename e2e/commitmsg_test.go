package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitHookTools is the node_modules holding commitlint and husky, which
// conformance/install-clients.sh puts in the agent cache.
func gitHookTools(t *testing.T) string {
	t.Helper()
	needTool(t, "npx", "npm")
	cache := os.Getenv("WIGGUM_AGENT_CACHE")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache", "wiggum-agents")
	}
	dir := filepath.Join(cache, "git-hooks", "node_modules")
	if _, err := os.Stat(filepath.Join(dir, ".bin", "commitlint")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("commitlint is not installed in %s; .ci/run runs conformance/install-clients.sh", dir)
		}
		t.Skipf("commitlint is not installed in %s: run conformance/install-clients.sh", dir)
	}
	return dir
}

// commitlintRepo makes dir a JavaScript project whose commits husky hands
// to commitlint (conventional commits), as `npx husky init` and the
// commitlint guide set it up.
func commitlintRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.Symlink(gitHookTools(t), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".gitignore"), "node_modules\n")
	writeFile(t, filepath.Join(dir, "package.json"), `{"name": "app", "private": true, "type": "module"}`+"\n")
	writeFile(t, filepath.Join(dir, "commitlint.config.js"), "export default { extends: ['@commitlint/config-conventional'] };\n")
	if r := run(t, dir, nil, filepath.Join(dir, "node_modules", ".bin", "husky")); r.code != 0 {
		t.Fatalf("husky: %s%s", r.stdout, r.stderr)
	}
	writeFile(t, filepath.Join(dir, ".husky", "commit-msg"), "npx --no -- commitlint --edit \"$1\"\n")
	mustRun(t, dir, "git", "add", ".")
	mustRun(t, dir, "git", "commit", "-q", "-m", "chore: commitlint")
}

// A project that lints its commit messages (husky + commitlint, conventional
// commits) refused the loop's "US-1: story 1": every story's commit failed
// after its agent's work, was rolled back and redone, until every story
// was skipped - and nothing could change the message. Now the message is a
// template (--commit-message, or git config wiggum.commitMessage), the
// commit-msg hook is asked before the first attempt (exit 2, no agent run,
// when it refuses), and a later story whose message it refuses stops the
// run with that story's work left uncommitted; the next run, with a
// template the hook takes, commits it without running the agent again.
func TestCommitMessageHookIsHonoured(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 0, `S=$WIGGUM_STORY
cat > /dev/null
echo "$S" >> "$MARKS/invocations"
echo "work of $S" > "work-$S.txt"
`)
	writeFile(t, filepath.Join(dir, "plan.md"), "- [ ] US-1: add the parser\n- [ ] US-2: Add The Login Page\n")
	mustRun(t, dir, "git", "commit", "-q", "-a", "-m", "chore: plan")
	commitlintRepo(t, dir)
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "1"}
	env := []string{"MARKS=" + marks}

	// The default message: refused up front.
	r := wiggum(t, dir, env, args...)
	if r.code != 2 || !strings.Contains(r.stderr, `refuses the message the loop would commit with, "US-1: add the parser"`) || !strings.Contains(r.stderr, "type-empty") {
		t.Fatalf("exit %d, want 2 with commitlint's words\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); len(n) != 0 {
		t.Fatalf("an agent ran: %v", n)
	}

	// A template the hook takes for US-1, not for US-2's Start Case title.
	mustRun(t, dir, "git", "config", "wiggum.commitMessage", "feat: {{STORY_TITLE}}")
	r = wiggum(t, dir, env, args...)
	if r.code != 1 || !strings.Contains(r.stderr, `US-2 passed, but your commit-msg hook refuses its commit message "feat: Add The Login Page"`) || !strings.Contains(r.stderr, "subject-case") {
		t.Fatalf("exit %d, want 1: US-2's message refused\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "work-US-2.txt")); err != nil || string(data) != "work of US-2\n" {
		t.Fatalf("US-2's work is not in the tree: %q %v", data, err)
	}

	// Again with the same template: refused before anything is resumed,
	// the work still there.
	r = wiggum(t, dir, env, args...)
	if r.code != 2 || !strings.Contains(r.stderr, `"feat: Add The Login Page"`) {
		t.Fatalf("run again unchanged: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "work-US-2.txt")); err != nil {
		t.Fatalf("US-2's work is gone: %v", err)
	}
	// As the refusal says: a template it takes; the run resumes.
	r = wiggum(t, dir, env, append(args, "--commit-message", "feat: {{story_title}}")...)
	if r.code != 0 {
		t.Fatalf("the resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); n["US-1"] != 1 || n["US-2"] != 1 {
		t.Errorf("the agent ran %v times, want once for each story", n)
	}
	if subjects := mustRun(t, dir, "git", "log", "--format=%s", head+"..main"); subjects != "feat: add The Login Page\nfeat: add the parser\n" {
		t.Errorf("the run's commits:\n%s", subjects)
	}
	if plan := mustRun(t, dir, "git", "show", "main:plan.md"); strings.Count(plan, "- [x]") != 2 {
		t.Errorf("the committed plan:\n%s", plan)
	}
}

// A template with a placeholder there is none of is bad input, before
// anything runs.
func TestCommitMessageTemplateChecked(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, "cat > /dev/null; echo ran >> \"$MARKS/invocations\"\n")
	r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--commit-message", "feat: {{TITLE}}")
	if r.code != 2 || !strings.Contains(r.stderr, "has {{TITLE}}, which is no placeholder") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); len(n) != 0 {
		t.Errorf("an agent ran: %v", n)
	}
}

// husky keeps its hooks in .husky/_, which `npm install` makes in the main
// tree and git ignores: in a parallel run's worktree core.hooksPath named a
// directory that is not there, and git ran no hook at all - the person's
// formatter, their commit-message check, on the agent's commits and on
// wiggum's. The worktrees' git now runs the main tree's hooks.
func TestParallelWorktreesRunHuskyHooks(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 0, `S=$WIGGUM_STORY
cat > /dev/null
printf 'code of %s   \n' "$S" > "work-$S.txt"
git add -A
if git commit -q -m "wip" > /dev/null 2>&1; then echo "$S took" >> "$MARKS/agent-commits"; else echo "$S refused" >> "$MARKS/agent-commits"; fi
`)
	writeFile(t, filepath.Join(dir, "plan.md"), "- [ ] US-1: add the parser\n- [ ] US-2: add the printer\n")
	mustRun(t, dir, "git", "commit", "-q", "-a", "-m", "chore: plan")
	commitlintRepo(t, dir)
	writeFile(t, filepath.Join(dir, ".husky", "pre-commit"), `for f in $(git diff --cached --name-only --diff-filter=AM); do sed -i 's/[[:space:]]*$//' "$f"; done
git diff --quiet || { echo "formatted; look and commit again"; exit 1; }
`)
	mustRun(t, dir, "git", "add", ".husky/pre-commit")
	mustRun(t, dir, "git", "commit", "-q", "-m", "chore: format on commit")
	head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--workers", "2", "--commit-message", "feat: {{story_title}}")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(filepath.Join(marks, "agent-commits"))
	if strings.Count(string(got), "refused") != 2 {
		t.Errorf("the agents' commits of \"wip\" in their worktrees: %q, want both refused by commitlint", got)
	}
	for _, s := range []string{"US-1", "US-2"} {
		if body := mustRun(t, dir, "git", "show", "main:work-"+s+".txt"); body != "code of "+s+"\n" {
			t.Errorf("%s's file on main was not formatted by the pre-commit hook: %q", s, body)
		}
	}
	if subjects := mustRun(t, dir, "git", "log", "--no-merges", "--format=%s", head+"..main"); strings.Contains(subjects, "wip") {
		t.Errorf("a commit commitlint refuses reached main:\n%s", subjects)
	}
}

// 'wiggum install --git --force' puts wiggum's git hooks in front of
// husky's stubs in .husky/_ - and husky writes all its stubs again each
// time it runs: on every npm install (its prepare script). An agent's npm
// install then failed its attempt as one that broke wiggum's hooks, every
// attempt of every story; one outside a run left the repository without
// wiggum's hooks, and 'wiggum install --git --force' refused to mend it.
// Now the run puts wiggum's shims back in front of husky's stubs, blaming
// no one, at its start and after each attempt, and install mends it too.
func TestHuskyRewritingItsHooksIsNoFailure(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
npm run --silent prepare
echo "work of $WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
`)
	if err := os.Symlink(gitHookTools(t), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ".gitignore"), "node_modules\n")
	writeFile(t, filepath.Join(dir, "package.json"), `{"name": "app", "private": true, "scripts": {"prepare": "husky"}}`+"\n")
	if r := run(t, dir, nil, "npm", "run", "--silent", "prepare"); r.code != 0 {
		t.Fatalf("npm run prepare: %s%s", r.stdout, r.stderr)
	}
	writeFile(t, filepath.Join(dir, ".husky", "pre-push"), "echo \"the project's pre-push\"\n")
	writeFile(t, filepath.Join(dir, ".husky", "post-commit"), "[ -z \"$MARKS\" ] || git log -1 --format=%s >> \"$MARKS/post-commit\"\n")
	mustRun(t, dir, "git", "add", ".")
	mustRun(t, dir, "git", "commit", "-q", "-m", "husky")
	mustRun(t, dir, wiggumBin, "install", "--git", "--force")
	shim := filepath.Join(dir, ".husky", "_", "pre-push")
	wiggumsHook := func() bool {
		data, _ := os.ReadFile(shim)
		return strings.Contains(string(data), "wiggum-managed-hook")
	}
	if !wiggumsHook() {
		t.Fatalf("wiggum install --git --force did not install into .husky/_:\n%s\n%s", mustRun(t, dir, "git", "config", "core.hooksPath"), mustRun(t, dir, "ls", "-la", ".husky/_"))
	}
	// An npm install outside any run.
	if r := run(t, dir, nil, "npm", "run", "--silent", "prepare"); r.code != 0 || wiggumsHook() {
		t.Fatalf("husky did not write its stub over wiggum's hook (exit %d): the test shows nothing", r.code)
	}
	if r := wiggum(t, dir, nil, "install", "--git", "--force"); r.code != 0 || !wiggumsHook() {
		t.Fatalf("wiggum install --git --force after husky: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustRun(t, dir, "npm", "run", "--silent", "prepare")
	r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--retries", "1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks); n["US-1"] != 1 || n["US-2"] != 1 {
		t.Errorf("the agent ran %v times, want once for each story", n)
	}
	if !strings.HasPrefix(r.stdout, "husky wrote its git hooks again since 'wiggum install --git'") {
		t.Errorf("the run does not say it put wiggum's hooks back at its start:\n%s", r.stdout)
	}
	if !wiggumsHook() {
		t.Error("wiggum's pre-push is not in .husky/_ after the run")
	}
	// The project's own hooks still run, behind wiggum's: its post-commit
	// on the run's commits, its pre-push.
	if got, _ := os.ReadFile(filepath.Join(marks, "post-commit")); string(got) != "US-1: story 1\nUS-2: story 2\n" {
		t.Errorf("the project's post-commit saw the commits %q, want the run's two", got)
	}
	if out := mustRun(t, dir, "sh", shim, "origin", "x"); !strings.Contains(out, "the project's pre-push") {
		t.Errorf("the project's pre-push did not run through wiggum's: %q", out)
	}
}
