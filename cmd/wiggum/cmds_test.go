package main

import (
	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are extra testscript commands shared by all scripts.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){}
}
