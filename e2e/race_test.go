//go:build race

package e2e

// raceBuild makes TestMain build the wiggum binary with the race detector
// when the tests themselves run under -race.
const raceBuild = true
