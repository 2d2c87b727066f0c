// Command linked is the minimal reader with every wiggum package linked in
// (their init functions run, nothing else): the share of a hook call that
// is the cost of starting the wiggum binary rather than the hook's work.
package main

import (
	"encoding/json"
	"io"
	"os"

	_ "github.com/wiggum-dev/wiggum/internal/cli"
)

func main() {
	data, _ := io.ReadAll(os.Stdin)
	var v map[string]any
	_ = json.Unmarshal(data, &v)
}
