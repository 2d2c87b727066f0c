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
