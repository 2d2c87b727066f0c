package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/config"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/notify"
	"github.com/wiggum-dev/wiggum/internal/signals"
	"github.com/wiggum-dev/wiggum/internal/telemetry"
)

// endFlush bounds how long a finished run waits for its last
// notifications and spans, both together.
const endFlush = 5 * time.Second

// flushEnd delivers the run's last notifications and exports its last
// spans at once, within one endFlush; a signal cuts the wait short: a
// second one when the first interrupted the run's work, else the first,
// even one that came after the work ended but before this wait began
// (worked: the run's work was not interrupted).
func flushEnd(ctx context.Context, g *Globals, stopNotify func(context.Context), tracer *telemetry.Tracer, worked bool) {
	var fctx context.Context
	var cancel context.CancelFunc
	if worked {
		fctx, cancel = context.WithTimeout(ctx, endFlush)
	} else {
		fctx, cancel = signals.Within(ctx, endFlush)
	}
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { stopNotify(fctx) })
	wg.Go(func() {
		if err := tracer.Shutdown(fctx); err != nil {
			g.Log().Warn(err.Error())
		}
	})
	wg.Wait()
}

// notifyPlan is where the run's notifications go and when a story
// counts as stuck: read and checked before anything changes.
type notifyPlan struct {
	sinks []*notify.Sink
	stuck time.Duration
}

// notifyDests reads the run's notification destinations, from the config
// file and --notify; bad ones are refused (exit 2). It changes nothing,
// so that --dry-run refuses them as the run does.
func (c *RunCmd) notifyDests() (*notifyPlan, error) {
	cfg, err := config.Read(config.Path())
	if err != nil {
		return nil, badinput.Wrap(err)
	}
	np := &notifyPlan{stuck: 30 * time.Minute}
	if cfg.NotifyStuck != nil {
		np.stuck = *cfg.NotifyStuck
	}
	if c.NotifyStuck != "" {
		np.stuck, err = time.ParseDuration(c.NotifyStuck)
		if err != nil || np.stuck < 0 {
			return nil, badinput.Errorf("run: --notify-stuck wants a duration such as 30m, got %q", c.NotifyStuck)
		}
	}
	// A bad destination is named by where it comes from: its text may
	// be shown only in part, its secrets hidden.
	add := func(raw, from string) error {
		s, err := notify.Parse(raw)
		if err != nil {
			return badinput.Errorf("run: %s: %v", from, err)
		}
		np.sinks = append(np.sinks, s)
		return nil
	}
	for i, raw := range cfg.Notify {
		if err := add(raw, fmt.Sprintf("config %s:%d", config.Path(), cfg.NotifyLines[i])); err != nil {
			return nil, err
		}
	}
	for i, raw := range c.Notify {
		from := "--notify"
		if len(c.Notify) > 1 {
			from = fmt.Sprintf("--notify #%d", i+1)
		}
		if err := add(raw, from); err != nil {
			return nil, err
		}
	}
	return np, nil
}

// startNotify starts sending the run's notifications to np's
// destinations by following the event log the run writes; the returned
// function delivers the last ones (until its context ends) and stops.
func startNotify(g *Globals, st *checkpoint.State, np *notifyPlan) (func(context.Context), error) {
	sinks, stuck := np.sinks, np.stuck
	if len(sinks) == 0 {
		return func(context.Context) {}, nil
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
	return func(ctx context.Context) {
		stop()
		for _, s := range n.Close(ctx) {
			g.Log().Debug("notify", "to", s.Dest, "sent", s.Sent, "failed", s.Failed, "dropped", s.Dropped)
		}
	}, nil
}
