//go:build !linux

package git

import "syscall"

// SyncFS makes everything written durable (sync(2): no syncfs here).
func SyncFS(string) error {
	syscall.Sync()
	return nil
}
