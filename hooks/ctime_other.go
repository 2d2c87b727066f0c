//go:build !linux

package hooks

import "time"

// changeTime is unknown here: every script is judged as the agent's.
func changeTime(string) (time.Time, bool) { return time.Time{}, false }
