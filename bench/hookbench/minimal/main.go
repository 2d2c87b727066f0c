// Command minimal is the benchmark baseline for wiggum's hooks: a Go program
// that only reads the hook payload from stdin and decodes its JSON.
package main

import (
	"encoding/json"
	"io"
	"os"
)

func main() {
	data, _ := io.ReadAll(os.Stdin)
	var v map[string]any
	_ = json.Unmarshal(data, &v)
}
