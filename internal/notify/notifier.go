package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune delivery; the zero value is sensible.
type Options struct {
	Queue   int           // messages waiting per destination (64)
	Timeout time.Duration // one request, or one notify-send (10s)
	Retries int           // tries after the first for a failed delivery (3)
	Backoff time.Duration // wait before the first retry, doubling after (1s)
	// Log receives warnings (a dropped or undeliverable message); it is
	// called from delivery goroutines and never sees a secret.
	Log func(msg string)
	// Client sends the requests; nil is a client with no redirects.
	Client *http.Client
}

// Notifier delivers messages to its destinations in the background. Send
// never blocks; Close waits, as long as its context lets it, for what is
// queued.
type Notifier struct {
	opts   Options
	dests  []*dest
	ctx    context.Context
	cancel context.CancelCauseFunc
	mu     sync.RWMutex // guards closed against Send racing Close
	closed bool
}

type dest struct {
	sink      *Sink
	q         chan Message
	done      chan struct{}
	sent      atomic.Int64
	dropped   atomic.Int64
	failed    atomic.Int64
	loggedAll atomic.Bool
}

// Stats is what became of one destination's messages.
type Stats struct {
	Dest    string // redacted
	Sent    int64
	Failed  int64 // given up on after the retries, or cut off by Close
	Dropped int64 // never queued: the queue was full
}

// New starts delivering to sinks.
func New(sinks []*Sink, o Options) *Notifier {
	if o.Queue <= 0 {
		o.Queue = 64
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Retries < 0 {
		o.Retries = 0
	} else if o.Retries == 0 {
		o.Retries = 3
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Log == nil {
		o.Log = func(string) {}
	}
	if o.Client == nil {
		// A redirect could carry the request, secrets and all, somewhere
		// the user did not name.
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	n := &Notifier{opts: o}
	n.ctx, n.cancel = context.WithCancelCause(context.Background())
	for _, s := range sinks {
		d := &dest{sink: s, q: make(chan Message, o.Queue), done: make(chan struct{})}
		n.dests = append(n.dests, d)
		go n.deliver(d)
	}
	return n
}

// Send queues m for every destination and returns at once. A destination
// whose queue is full drops m and counts it.
func (n *Notifier) Send(m Message) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.closed {
		return
	}
	for _, d := range n.dests {
		select {
		case d.q <- m:
		default:
			if d.dropped.Add(1) == 1 {
				n.opts.Log(fmt.Sprintf("notify: %s is not keeping up; dropped %q (further drops are counted, not logged)", d.sink, m.Kind))
			}
		}
	}
}

// Close stops taking messages, gives the queued ones until ctx ends to go
// out, then abandons the rest (in-flight requests included) and returns
// what became of each destination's messages.
func (n *Notifier) Close(ctx context.Context) []Stats {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		for _, d := range n.dests {
			close(d.q)
		}
	}
	n.mu.Unlock()
flush:
	for _, d := range n.dests {
		select {
		case <-d.done:
		case <-ctx.Done():
			break flush
		}
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		n.cancel(errInterrupted)
	} else {
		n.cancel(errCutOff)
	}
	for _, d := range n.dests {
		<-d.done
	}
	stats := n.Stats()
	for _, s := range stats {
		if s.Failed > 0 || s.Dropped > 0 {
			n.opts.Log(fmt.Sprintf("notify: %s: %d sent, %d not delivered, %d dropped (queue full)", s.Dest, s.Sent, s.Failed, s.Dropped))
		}
	}
	return stats
}

// Stats is what became of each destination's messages so far.
func (n *Notifier) Stats() []Stats {
	var stats []Stats
	for _, d := range n.dests {
		stats = append(stats, Stats{Dest: d.sink.String(), Sent: d.sent.Load(), Failed: d.failed.Load(), Dropped: d.dropped.Load()})
	}
	return stats
}

// deliver sends d's messages one at a time, in order.
func (n *Notifier) deliver(d *dest) {
	defer close(d.done)
	for m := range d.q {
		if n.ctx.Err() != nil {
			d.failed.Add(1)
			continue
		}
		if err := n.sendWithRetries(d, m); err != nil {
			d.failed.Add(1)
			if n.ctx.Err() == nil || !d.loggedAll.Swap(true) {
				n.opts.Log(fmt.Sprintf("notify: %s: %q not delivered: %v", d.sink, m.Kind, err))
			}
			continue
		}
		d.sent.Add(1)
	}
}

func (n *Notifier) sendWithRetries(d *dest, m Message) error {
	wait := n.opts.Backoff
	var err error
	for try := 0; ; try++ {
		var retry bool
		retry, err = n.sendOnce(d.sink, m)
		if err == nil || !retry || try >= n.opts.Retries || errors.Is(err, errCutOff) {
			return err
		}
		select {
		case <-n.ctx.Done():
			return fmt.Errorf("%w (%w)", err, context.Cause(n.ctx))
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// sendOnce makes one delivery attempt and says whether a failure is worth
// retrying.
func (n *Notifier) sendOnce(s *Sink, m Message) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	if s.Format == FormatDesktop {
		return false, desktop(ctx, m)
	}
	body, ctype, headers, err := encode(s, m)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("User-Agent", "wiggum")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if s.hasUser {
		if s.Format == FormatNtfy && s.user == "" {
			req.Header.Set("Authorization", "Bearer "+s.pass)
		} else {
			req.SetBasicAuth(s.user, s.pass)
		}
	}
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		return true, scrub(err, ctx)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("HTTP %d", resp.StatusCode)
	default:
		return false, fmt.Errorf("HTTP %d (not retried)", resp.StatusCode)
	}
}

// errCutOff is a delivery the end of the run stopped, in flight or
// waiting to retry; errInterrupted one a signal stopped sooner.
var (
	errCutOff      = errors.New("cut off at exit")
	errInterrupted = fmt.Errorf("%w by a signal", errCutOff)
)

// scrub turns a client error into one that cannot hold the URL: a
// *url.Error's message repeats the whole URL, secrets included.
func scrub(err error, ctx context.Context) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		return errors.New("no answer within the timeout")
	case errors.Is(err, context.Canceled):
		return context.Cause(ctx)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return errors.New("request failed")
	}
	if errors.As(ue.Err, new(*url.Error)) {
		return errors.New("request failed")
	}
	return ue.Err
}

// encode renders m in format's wire form.
func encode(s *Sink, m Message) (body []byte, ctype string, headers map[string]string, err error) {
	switch s.Format {
	case FormatNtfy:
		// ntfy's JSON publishing: UTF-8 titles survive, unlike in headers.
		text := m.Text
		if m.Repo != "" {
			text += "\n(" + m.Repo + hostSuffix(m.Host) + ")"
		}
		body, err = json.Marshal(map[string]any{
			"topic": s.topic, "title": m.Title, "message": text,
			"priority": map[string]int{SeverityInfo: 3, SeverityWarning: 4, SeverityError: 5}[m.Severity],
			"tags":     []string{map[string]string{SeverityInfo: "information_source", SeverityWarning: "warning", SeverityError: "rotating_light"}[m.Severity]},
		})
		return body, "application/json", nil, err
	case FormatSlack:
		text := "*" + slackEscape(m.Title) + "*"
		if m.Repo != "" {
			text += " · " + slackEscape(m.Repo+hostSuffix(m.Host))
		}
		text += "\n" + slackEscape(m.Text)
		body, err = json.Marshal(map[string]string{"text": text})
		return body, "application/json", nil, err
	default:
		body, err = json.Marshal(m)
		return body, "application/json", nil, err
	}
}

func hostSuffix(host string) string {
	if host == "" {
		return ""
	}
	return " on " + host
}

// slackEscape escapes the three characters Slack's mrkdwn treats as markup.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// desktop shows m with notify-send; its arguments are never a shell's.
func desktop(ctx context.Context, m Message) error {
	urgency := map[string]string{SeverityInfo: "normal", SeverityWarning: "normal", SeverityError: "critical"}[m.Severity]
	cmd := exec.CommandContext(ctx, "notify-send", "--app-name=wiggum", "--urgency="+urgency, "--", m.Title, m.Text)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("notify-send: %v: %s", err, clip(string(out)))
	}
	return nil
}
