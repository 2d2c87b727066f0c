package install

import (
	"os"
	"testing"
)

// TestMain keeps the record of created settings files (created.go) out of
// the home of whoever runs the tests.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wiggum-install-test")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
