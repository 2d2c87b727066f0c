package git

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS makes everything written to the filesystem holding dir durable
// (syncfs(2)): git writes loose objects and refs without fsync (its
// default core.fsync), so after a power cut a backup commit and the ref
// naming it could be empty files while the working tree changes made
// after them were kept. One call covers the objects of every process
// (the agent's own commits too), however many.
func SyncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}
