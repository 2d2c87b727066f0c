package main

import (
	"github.com/rogpeppe/go-internal/testscript"
)

type scriptCmd = func(ts *testscript.TestScript, neg bool, args []string)

// cmdSets are each area's extra script commands, added by init functions
// in <area>_cmds_test.go so that areas never edit the same map.
var cmdSets []map[string]scriptCmd

// scriptCmds are extra testscript commands shared by all scripts.
func scriptCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	cmds := map[string]scriptCmd{}
	for _, set := range cmdSets {
		for name, fn := range set {
			cmds[name] = fn
		}
	}
	return cmds
}
