package loop

import (
	"errors"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/git"
)

func TestSigningWords(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&git.Error{Args: []string{"commit"}, Stderr: "error: Load key \"k\": incorrect passphrase supplied to decrypt private key?\n\nfatal: failed to write commit object\n"},
			`Load key "k": incorrect passphrase supplied to decrypt private key?`},
		{&git.Error{Args: []string{"commit"}, Stderr: "error: gpg failed to sign the data\nfatal: failed to write commit object\n"},
			"gpg failed to sign the data"},
		{errors.New("signal: killed"), "signal: killed"},
	} {
		if got := signingWords(c.err); got != c.want {
			t.Errorf("signingWords(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
