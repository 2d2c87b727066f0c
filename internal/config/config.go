// Package config reads wiggum's user configuration: a small file of
// `key = value` lines outside any repository, so that what it holds (a
// webhook's secret URL) is never committed with a project. A missing file
// is an empty configuration; a line it does not understand is an error
// naming the file and line.
package config

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// Env overrides where the file is.
const Env = "WIGGUM_CONFIG"

// Config is the file's content.
type Config struct {
	// Notify lists `notify = URL` lines: destinations for wiggum run's
	// notifications, added to those given with --notify.
	Notify []string
	// NotifyLines are the lines of the Notify values, for messages.
	NotifyLines []int
	// NotifyStuck is `notify-stuck = 30m`, when set.
	NotifyStuck *time.Duration
}

// Error is a configuration file that cannot be used.
type Error struct {
	Path   string
	Line   int
	Reason string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("config %s: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("config %s:%d: %s", e.Path, e.Line, e.Reason)
}

// Path is the configuration file: $WIGGUM_CONFIG, else
// $XDG_CONFIG_HOME/wiggum/config, else ~/.config/wiggum/config; "" when
// there is no home to look in.
func Path() string {
	if p := os.Getenv(Env); p != "" {
		return p
	}
	if dir := Dir(); dir != "" {
		return filepath.Join(dir, "config")
	}
	return ""
}

// Dir is wiggum's directory for the person's own files:
// $XDG_CONFIG_HOME/wiggum, else ~/.config/wiggum; "" when there is no home
// to look in.
func Dir() string {
	if dir := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "wiggum")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "wiggum")
	}
	return ""
}

// maxSize bounds the file: it is a handful of lines.
const maxSize = 64 << 10

// Read reads the configuration at path. Lines are `key = value`; blank
// lines and lines starting with # are ignored.
func Read(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	f, err := statefile.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, &Error{Path: path, Reason: err.Error()}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxSize {
		return c, &Error{Path: path, Reason: "larger than 64 KiB; it should be a few lines"}
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return c, &Error{Path: path, Line: n, Reason: "expected key = value"}
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "notify":
			if value == "" {
				return c, &Error{Path: path, Line: n, Reason: "notify needs a destination"}
			}
			c.Notify, c.NotifyLines = append(c.Notify, value), append(c.NotifyLines, n)
		case "notify-stuck":
			d, err := time.ParseDuration(value)
			if err != nil || d < 0 {
				return c, &Error{Path: path, Line: n, Reason: fmt.Sprintf("notify-stuck wants a duration such as 30m, got %q", value)}
			}
			c.NotifyStuck = &d
		default:
			return c, &Error{Path: path, Line: n, Reason: fmt.Sprintf("unknown key %q (known: notify, notify-stuck)", key)}
		}
	}
	if err := sc.Err(); err != nil {
		return c, &Error{Path: path, Reason: err.Error()}
	}
	return c, nil
}
