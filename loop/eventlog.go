package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// EventsLink is the event log's second name, in the main tree's git
// directory, as JournalLink is the run journal's: an agent's rm -rf .ralph
// took the log (the journal and the lock were put back, the log not, and
// not said), and wiggum report then said the run had never happened.
const EventsLink = "wiggum-events.jsonl"

func eventsLink(st *checkpoint.State) string {
	return filepath.Join(st.Repo.GitDir, EventsLink)
}

// linkEvents gives the run's event log its second name (at the run's
// start, once the log has its first record).
func (r *run) linkEvents() {
	path := r.st.RuntimePath(layout.EventFile)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// Never written through (statefile.OpenAppend): said once, here.
		r.disp.printf("warning: %s is a symbolic link, and wiggum writes its own files only: this run records no events (watch and report will not see it); remove the link to have them", relPath(r.st.Repo.Root, path))
		return
	}
	layout.LinkSecondName(path, eventsLink(r.st))
}

// keepEvents puts the event log back under its name when an attempt
// deleted or replaced it, with every record: those up to the deletion
// (its second name's) and those written since (hooks', into a new file
// there). It reports whether it did.
func (r *run) keepEvents() (bool, error) {
	path, link := r.st.RuntimePath(layout.EventFile), eventsLink(r.st)
	held, err := os.Stat(link)
	if err != nil {
		return false, nil // no second name yet: nothing to put back from
	}
	if now, err := os.Stat(path); err == nil && os.SameFile(now, held) {
		return false, nil
	}
	err = statefile.WithLock(path, func() error {
		newer, err := statefile.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if len(newer) > 0 {
			f, err := os.OpenFile(link, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0)
			if err != nil {
				return err
			}
			_, werr := f.Write(newer)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return werr
			}
		}
		tmp := path + ".put-back"
		_ = os.Remove(tmp)
		if err := os.Link(link, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	})
	if err != nil {
		return false, fmt.Errorf("event log %s: put back: %w", path, err)
	}
	return true, nil
}

// maxEventTitle bounds a story's title in an event: a line of the log over
// events.MaxLine is one its readers (watch, report) skip, and a plan's
// title can be any length.
const maxEventTitle = 4 << 10

// eventTitle is title as events record it: cut at maxEventTitle bytes
// (whole UTF-8 characters), saying how much more there was.
func eventTitle(title string) string {
	if len(title) <= maxEventTitle {
		return title
	}
	cut := strings.ToValidUTF8(title[:maxEventTitle], "")
	return cut + fmt.Sprintf(" … [%d more bytes]", len(title)-len(cut))
}
