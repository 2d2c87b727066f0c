package git

import (
	"os"
	"path/filepath"
	"testing"
)

// TestVerbatim: every place an attribute or a conversion can come from
// makes Verbatim say "ask git"; without them it says git stores the files
// as they are.
func TestVerbatim(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"a.txt", "d/e/f.txt"}
	expect := func(want bool, why string) {
		t.Helper()
		if got := r.Verbatim(paths); got != want {
			t.Fatalf("%s: Verbatim = %v, want %v", why, got, want)
		}
	}
	expect(true, "a plain repository")
	for _, f := range []string{".gitattributes", "d/.gitattributes", "d/e/.gitattributes", ".git/info/attributes"} {
		write(t, dir, f, "*.txt text\n")
		expect(false, f)
		os.Remove(filepath.Join(dir, f))
	}
	write(t, dir, "other/.gitattributes", "* text\n")
	expect(true, "attributes in a directory none of the paths is in")
	home := os.Getenv("HOME")
	write(t, home, ".config/git/attributes", "* text\n")
	expect(false, "the user's attributes file")
	os.Remove(filepath.Join(home, ".config/git/attributes"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	write(t, home, "xdg/git/attributes", "* text\n")
	expect(false, "the user's attributes file under XDG_CONFIG_HOME")
	os.Remove(filepath.Join(home, "xdg/git/attributes"))
	for _, kv := range [][2]string{{"core.autocrlf", "input"}, {"core.eol", "crlf"}, {"filter.lfs.clean", "x"}, {"core.attributesFile", "/x"}, {"core.bigFileThreshold", "1k"}, {"include.path", "x"}} {
		gitT(t, dir, "config", kv[0], kv[1])
		expect(false, kv[0])
		gitT(t, dir, "config", "--unset", kv[0])
		write(t, home, ".gitconfig", "[x]\n\t"+kv[0]+" = y\n")
		expect(false, kv[0]+" in the global config")
		os.Remove(filepath.Join(home, ".gitconfig"))
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(home, "sysconfig"))
	write(t, home, "sysconfig", "[core]\n\tautocrlf = true\n")
	expect(false, "the system config")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_ATTR_SOURCE", "HEAD")
	expect(false, "GIT_ATTR_SOURCE")
	os.Unsetenv("GIT_ATTR_SOURCE")
	paths = []string{"d/.gitattributes"}
	expect(false, "an attributes file among the paths")
	paths = []string{"a.txt"}
	expect(true, "back to plain")
}
