// Command hookonly is `wiggum hook` in a binary of its own: only
// internal/hookentry and what it imports are linked, so its cost is what a
// hook costs with the packages a hook needs and nothing else - the floor
// for a hook inside the one wiggum binary (bench/hooks.sh times it beside
// wiggum).
package main

import _ "github.com/wiggum-dev/wiggum/internal/hookentry" // answers from its init and exits

func main() {}
