package remote

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Machine names the clone a claim comes from: the host's name for people,
// and an id kept in the clone's git directory (never in the work tree), so
// two clones on one host are two machines and a clone keeps its id.
type Machine struct {
	ID   string `json:"id"`
	Host string `json:"host"`
}

func (m Machine) String() string { return m.Host + "/" + m.ID }

// machineFile is the id's home in the common git dir.
const machineFile = "wiggum-machine-id"

// Identify reads the clone's machine id, making one the first time. Two
// processes making it at once both end with the same id: the file is
// created with O_EXCL and the loser reads the winner's.
func Identify(repo *git.Repo) (Machine, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	path := filepath.Join(repo.CommonDir, machineFile)
	for range 3 {
		id, err := readID(path)
		if err == nil {
			return Machine{ID: id, Host: host}, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Machine{}, err
		}
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Machine{}, fmt.Errorf("remote: make a machine id: %w", err)
		}
		tmp, err := os.CreateTemp(repo.CommonDir, machineFile+".tmp*")
		if err != nil {
			return Machine{}, fmt.Errorf("remote: write the machine id: %w", err)
		}
		_, werr := tmp.WriteString(hex.EncodeToString(b[:]) + "\n")
		serr := tmp.Sync()
		cerr := tmp.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			_ = os.Remove(tmp.Name())
			return Machine{}, fmt.Errorf("remote: write the machine id: %w", err)
		}
		// A hard link fails if the name exists: whole file or nothing.
		err = os.Link(tmp.Name(), path)
		_ = os.Remove(tmp.Name())
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return Machine{}, fmt.Errorf("remote: write the machine id: %w", err)
		}
	}
	return Machine{}, fmt.Errorf("remote: could not read or create %s", path)
}

func readID(path string) (string, error) {
	data, err := statefile.ReadFile(path)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(data))
	if len(id) < 4 || len(id) > 64 || strings.ContainsFunc(id, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
	}) {
		return "", fmt.Errorf("remote: %s is corrupt (%q); delete it and wiggum makes a new machine id", path, id)
	}
	return id, nil
}
