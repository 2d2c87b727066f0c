package notify

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/events"
)

// FollowOptions configure Follow.
type FollowOptions struct {
	// From is the log offset to start at: the log's size before the run
	// began, so only this run's events are sent.
	From int64
	// Stuck sends a "stuck" message when no attempt has ended for this
	// long (0: never). It is sent once, then again only after progress.
	Stuck time.Duration
	// Poll is how often the log is read (500ms).
	Poll time.Duration
	Repo string // put in every message
	Host string
	// Log receives a line the reader had to skip.
	Log func(msg string)
}

// Follow reads the event log at path as the run appends to it - the loop's
// own events and those of the agent's hooks alike - and sends n a message
// for each that matters, plus "stuck" when the run stops making progress.
// The loop never waits for it. stop reads the log one last time, so the
// run's final event is sent, and returns.
func Follow(n *Notifier, path string, o FollowOptions) (stop func()) {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = func(string) {}
	}
	f := &follower{n: n, o: o, r: events.NewReaderAt(path, o.From), t: newTracker(), progress: time.Now()}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.r.Close()
		tick := time.NewTicker(o.Poll)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				f.read()
				return
			case <-tick.C:
				f.read()
				f.checkStuck(time.Now())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

type follower struct {
	n        *Notifier
	o        FollowOptions
	r        *events.Reader
	t        *tracker
	progress time.Time // when an attempt last ended
	stuck    bool      // the stuck message went out since then
}

func (f *follower) read() {
	for {
		ev, err := f.r.Next()
		var le *events.LineError
		switch {
		case errors.As(err, &le):
			f.o.Log("notify: " + le.Error())
			continue
		case errors.Is(err, io.EOF):
			return
		case err != nil:
			f.o.Log("notify: reading the event log: " + err.Error())
			return
		}
		switch ev.Name {
		case events.IterationEnd, events.Merged, events.UsageLimitEnd, events.RunStart:
			f.progress, f.stuck = time.Now(), false
		}
		m, ok := f.t.message(ev)
		if !ok {
			continue
		}
		m.Repo, m.Host = f.o.Repo, f.o.Host
		f.n.Send(m)
	}
}

func (f *follower) checkStuck(now time.Time) {
	if f.o.Stuck <= 0 || f.stuck || f.t.limited || now.Sub(f.progress) < f.o.Stuck {
		return
	}
	f.stuck = true
	m := f.t.stuck(f.progress, f.o.Stuck, now)
	m.Repo, m.Host = f.o.Repo, f.o.Host
	f.n.Send(m)
}
