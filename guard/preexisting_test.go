package guard

import (
	"io/fs"
	"path"
	"strings"
	"testing"
)

// TestPreexistingScripts: a script that predates the session (the
// project's own ./gradlew or ./configure) is held only to clear denials -
// what the guard cannot follow in it is not asked about, or every Java
// build would stop under agents that cannot ask - while a script the agent
// wrote is judged in full, also when a project script runs it.
func TestPreexistingScripts(t *testing.T) {
	gradlew := "#!/bin/sh\nJAVACMD=${JAVA_HOME:-/usr}/bin/java\nexec \"$JAVACMD\" \"$@\"\n"
	files := map[string]string{
		"gradlew":   gradlew,
		"mine.sh":   gradlew, // the same text, written during the session
		"release":   "#!/bin/sh\ngit push origin main\n",
		"wrapper":   "#!/bin/sh\nsh ./helper.sh\n",
		"helper.sh": "cmd=$(cat next); $cmd\n",
		"configure": "#!/bin/sh\n" + strings.Repeat("# generated\n", MaxScript/12+10),
		"big.sh":    "#!/bin/sh\n" + strings.Repeat("# generated\n", MaxScript/12+10),
	}
	old := map[string]bool{"gradlew": true, "release": true, "wrapper": true, "configure": true}
	for _, c := range []struct {
		cmd  string
		want Action
	}{
		{"./gradlew test", Allow},
		{"./mine.sh test", Ask},
		{"./release", Deny},
		{"./wrapper", Ask},
		{"./configure --prefix=/usr", Allow},
		{"./big.sh", Ask},
	} {
		p := testPolicy("main")
		p.ReadFile = func(name string) ([]byte, error) {
			text, ok := files[path.Base(name)]
			if !ok {
				return nil, fs.ErrNotExist
			}
			return []byte(text), nil
		}
		p.Preexisting = func(name string) bool { return old[path.Base(name)] }
		if d := Check(c.cmd, p); d.Action != c.want {
			t.Errorf("%q: got %v, want %s", c.cmd, d, c.want)
		}
		// Without the session's start known, every script is the agent's.
		p.Preexisting = nil
		if d := Check("./gradlew test", p); d.Action != Ask {
			t.Errorf("./gradlew with Preexisting unset: got %v, want ask", d)
		}
	}
}

// The repository's own git hooks - there before the session - are the
// person's checks: removing, disabling or rewriting one skips them as
// --no-verify would, for the person's later commits too, and unseen. A
// hook the agent made in its session, a sample, reading one and making
// one executable stay allowed; so does everything when it cannot be
// told what predates the session.
func TestProjectHooksPredatingTheSession(t *testing.T) {
	p := testPolicy("main")
	p.HookFiles = nil // none of wiggum's, so that only the project's count
	p.Preexisting = func(name string) bool { return name == "/work/repo/.git/hooks/pre-commit" }
	for cmd, want := range map[string]Action{
		"rm .git/hooks/pre-commit":                           Deny,
		"rm -f /work/repo/.git/hooks/pre-commit":             Deny,
		"chmod -x .git/hooks/pre-commit":                     Deny,
		"echo 'exit 0' > .git/hooks/pre-commit":              Deny,
		"mv .git/hooks/pre-commit .git/hooks/pre-commit.off": Deny,
		"sed -i 's/ruff/true/' .git/hooks/pre-commit":        Deny,
		"truncate -s 0 .git/hooks/pre-commit":                Deny,
		"cd .git/hooks && rm pre-commit":                     Deny,
		"rm .git/hooks/commit-msg":                           Allow, // the agent's own, made in its session
		"echo 'npx lint-staged' > .git/hooks/commit-msg":     Allow,
		"rm .git/hooks/pre-commit.sample":                    Allow,
		"chmod +x .git/hooks/pre-commit":                     Allow,
		"cat .git/hooks/pre-commit":                          Allow,
	} {
		if d := Check(cmd, p); d.Action != want {
			t.Errorf("%s: got %s (%s), want %s", cmd, d.Action, d.Reason, want)
		}
	}
	if d := CheckEdit(".git/hooks/pre-commit", p); d.Action != Deny || !strings.Contains(d.Reason, "as --no-verify would") {
		t.Errorf("editing the project's hook: %+v", d)
	}
	if d := CheckEdit("/work/repo/.git/hooks/commit-msg", p); d.Action != Allow {
		t.Errorf("editing a hook the agent made: %+v", d)
	}
	p.Preexisting = nil
	if d := Check("rm .git/hooks/pre-commit", p); d.Action != Allow {
		t.Errorf("with nothing known of what predates the session: %+v", d)
	}
}
