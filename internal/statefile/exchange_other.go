//go:build !linux

package statefile

// exchange is not available here: Exchange renames instead.
func exchange(a, b string) error { return errNoExchange }
