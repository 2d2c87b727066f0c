package cli

import (
	"os"
	"path/filepath"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/config"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/notify"
)

// notifyFlush bounds how long a finished run waits for its last
// notifications.
const notifyFlush = 5 * time.Second

// startNotify starts sending the run's notifications, from --notify and
// the config file, by following the event log the run writes; the
// returned function delivers the last ones (within notifyFlush) and stops.
// Bad destinations are refused before anything runs.
func (c *RunCmd) startNotify(g *Globals, st *checkpoint.State) (func(), error) {
	cfg, err := config.Read(config.Path())
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	stuck := 30 * time.Minute
	if cfg.NotifyStuck != nil {
		stuck = *cfg.NotifyStuck
	}
	if c.NotifyStuck != "" {
		stuck, err = time.ParseDuration(c.NotifyStuck)
		if err != nil || stuck < 0 {
			return nil, badinput.Errorf("run: --notify-stuck wants a duration such as 30m, got %q", c.NotifyStuck)
		}
	}
	var sinks []*notify.Sink
	for _, raw := range append(append([]string(nil), cfg.Notify...), c.Notify...) {
		s, err := notify.Parse(raw)
		if err != nil {
			return nil, badinput.Errorf("run: %v", err)
		}
		sinks = append(sinks, s)
	}
	if len(sinks) == 0 {
		return func() {}, nil
	}
	logPath := st.Path(layout.RuntimeDir + "/" + layout.EventFile)
	from, err := events.Size(logPath)
	if err != nil {
		return nil, err
	}
	warn := func(msg string) { g.Log().Warn(msg) }
	n := notify.New(sinks, notify.Options{Log: warn})
	host, _ := os.Hostname()
	stop := notify.Follow(n, logPath, notify.FollowOptions{
		From: from, Stuck: stuck, Repo: filepath.Base(st.Repo.Root), Host: host, Log: warn,
	})
	return func() {
		stop()
		for _, s := range n.Close(notifyFlush) {
			g.Log().Debug("notify", "to", s.Dest, "sent", s.Sent, "failed", s.Failed, "dropped", s.Dropped)
		}
	}, nil
}
