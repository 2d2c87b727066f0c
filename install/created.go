package install

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/wiggum-dev/wiggum/internal/config"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// A settings file install created is recorded, so that uninstall, leaving
// it with nothing but {}, removes it - and its directory, when install
// made that too - while a file the person had before, even {}, stays. The
// record holds what install last wrote there: a file changed since by
// anyone else (or made anew by the person after one install created was
// removed) is the person's too, and stays.
type createdFile struct {
	Dir bool   `json:"dir"` // install made the file's directory
	Sum string `json:"sum"` // sha256 of what install last wrote
}

// createdRecord is where the record lives: wiggum's directory for the
// person's files, outside every project ("" when there is no home).
func createdRecord() string {
	dir := config.Dir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "created-settings.json")
}

func checksum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// created is the record of the file at path, when install created it and
// nobody has changed it since (it holds data).
func created(path string, data []byte) *createdFile {
	rec := createdRecord()
	if rec == "" {
		return nil
	}
	var files map[string]*createdFile
	if statefile.ReadJSON(rec, &files, nil) != nil {
		return nil
	}
	if f := files[path]; f != nil && f.Sum == checksum(data) {
		return f
	}
	return nil
}

// recordCreated notes that path now holds data install wrote into a file
// it created (f), or, with f nil, forgets path (uninstall removed it). The record is best
// effort: without it, uninstall only leaves {} where it could have
// removed the file.
func recordCreated(path string, f *createdFile, data []byte) {
	rec := createdRecord()
	if rec == "" {
		return
	}
	_ = statefile.WithLock(rec, func() error {
		var files map[string]*createdFile
		// A missing or damaged record is started afresh: what it lost
		// only leaves {} files behind.
		if statefile.ReadJSON(rec, &files, nil) != nil || files == nil {
			files = map[string]*createdFile{}
		}
		// Files gone since (a project deleted, a test's temporary
		// directory) are forgotten: the record does not grow for ever.
		for p := range files {
			if _, err := os.Lstat(p); err != nil && p != path {
				delete(files, p)
			}
		}
		if f == nil {
			delete(files, path)
		} else {
			f.Sum = checksum(data)
			files[path] = f
		}
		return statefile.WriteJSON(rec, files)
	})
}
