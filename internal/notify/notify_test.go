package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/proc"
)

// TestMain lets the test binary act as wiggum's supervisor for the loop
// the end-to-end test runs.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == proc.SuperviseArg {
		os.Exit(proc.Supervise(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// recorder is a server on 127.0.0.1 that keeps every request it answers.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []received
	got  chan received
}

type received struct {
	Path, Auth, Type string
	Body             []byte
}

// newRecorder answers with status(n) for the n-th request (from 1).
func newRecorder(t *testing.T, status func(n int) int) *recorder {
	rec := &recorder{got: make(chan received, 100)}
	var n atomic.Int64
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got := received{Path: r.URL.RequestURI(), Auth: r.Header.Get("Authorization"), Type: r.Header.Get("Content-Type"), Body: body}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, got)
		rec.mu.Unlock()
		rec.got <- got
		w.WriteHeader(status(int(n.Add(1))))
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

// wait returns the next request, failing the test if none comes.
func (rec *recorder) wait(t *testing.T) received {
	t.Helper()
	select {
	case r := <-rec.got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("no request reached the server")
		return received{}
	}
}

// hanger is a server that never answers until released.
type hanger struct {
	srv     *httptest.Server
	entered chan struct{} // one value per request that arrived
	release chan struct{}
	exited  chan struct{} // closed when a handler returns
	once    sync.Once
}

func newHanger(t *testing.T) *hanger {
	h := &hanger{entered: make(chan struct{}, 100), release: make(chan struct{}), exited: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.entered <- struct{}{}
		<-h.release
		h.once.Do(func() { close(h.exited) })
	}))
	t.Cleanup(func() {
		h.free()
		h.srv.Close()
	})
	return h
}

func (h *hanger) free() {
	select {
	case <-h.release:
	default:
		close(h.release)
	}
}

func mustParse(t *testing.T, raw string) *Sink {
	t.Helper()
	s, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) log(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func fast(l *logs) Options {
	return Options{Backoff: time.Millisecond, Retries: 2, Log: l.log}
}

func msg(kind string) Message {
	return Message{Kind: kind, Title: "wiggum: " + kind, Text: "text of " + kind, Severity: SeverityWarning, Repo: "repo"}
}

// One endpoint answers, one fails once and then answers, one always
// fails: each message reaches the first two, the third is given up on
// after the retries - and counted, and logged.
func TestDeliveryRetriesAndGivesUp(t *testing.T) {
	ok := newRecorder(t, func(int) int { return 200 })
	flaky := newRecorder(t, func(n int) int {
		if n == 1 {
			return 500
		}
		return 204
	})
	broken := newRecorder(t, func(int) int { return 503 })
	rejects := newRecorder(t, func(int) int { return 404 })
	var l logs
	n := New([]*Sink{mustParse(t, ok.srv.URL+"/hook"), mustParse(t, flaky.srv.URL), mustParse(t, broken.srv.URL), mustParse(t, rejects.srv.URL)}, fast(&l))
	n.Send(msg(KindRunEnd))
	stats := n.Close(within(t, time.Minute))

	if ok.count() != 1 || flaky.count() != 2 || broken.count() != 3 || rejects.count() != 1 {
		t.Errorf("requests: ok %d, flaky %d, broken %d (want 1 + 2 retries), rejects %d (4xx is not retried)", ok.count(), flaky.count(), broken.count(), rejects.count())
	}
	want := []Stats{{Sent: 1}, {Sent: 1}, {Failed: 1}, {Failed: 1}}
	for i, s := range stats {
		if s.Sent != want[i].Sent || s.Failed != want[i].Failed || s.Dropped != 0 {
			t.Errorf("%s: %+v, want %+v", s.Dest, s, want[i])
		}
	}
	var m Message
	if err := json.Unmarshal(ok.reqs[0].Body, &m); err != nil || m.Kind != KindRunEnd || m.Title != "wiggum: run_end" || m.Repo != "repo" {
		t.Errorf("webhook body %s: %+v, %v", ok.reqs[0].Body, m, err)
	}
	if ok.reqs[0].Path != "/hook" || ok.reqs[0].Type != "application/json" {
		t.Errorf("webhook request %+v", ok.reqs[0])
	}
	if s := l.String(); !strings.Contains(s, "HTTP 503") || !strings.Contains(s, "HTTP 404 (not retried)") || !strings.Contains(s, "1 not delivered") {
		t.Errorf("log:\n%s", s)
	}
}

// A hanging endpoint holds one message in flight; the queue takes what
// fits, the rest is dropped and counted; Close gives up on the hanging
// request after its bound and reports it, while the handler still hangs.
func TestHangingEndpointDropsAndCounts(t *testing.T) {
	h := newHanger(t)
	ok := newRecorder(t, func(int) int { return 200 })
	var l logs
	o := fast(&l)
	o.Queue = 2
	n := New([]*Sink{mustParse(t, h.srv.URL), mustParse(t, ok.srv.URL)}, o)
	n.Send(msg("first"))
	<-h.entered // the first message is now in flight, the queue empty
	ok.wait(t)
	for i := range 9 {
		n.Send(msg(fmt.Sprint("more-", i)))
		ok.wait(t) // the healthy endpoint keeps up
	}
	waitFor(t, func() bool { return n.Stats()[1].Sent == 10 })
	stats := n.Close(within(t, 0))
	select {
	case <-h.exited:
		t.Fatal("the hanging handler returned before Close did")
	default:
	}
	if s := stats[0]; s.Sent != 0 || s.Failed != 3 || s.Dropped != 7 {
		t.Errorf("hanging endpoint: %+v, want 1 in flight + 2 queued failed, 7 dropped", s)
	}
	if s := stats[1]; s.Sent != 10 || s.Failed != 0 || s.Dropped != 0 {
		t.Errorf("healthy endpoint: %+v", s)
	}
	log := l.String()
	if strings.Count(log, "is not keeping up") != 1 || !strings.Contains(log, "7 dropped") {
		t.Errorf("log:\n%s", log)
	}
	n.Send(msg("after close")) // dropped silently, never panics
}

// A request cut off by the run's end is said to be once: the log read
// "not delivered: cut off at exit (cut off at exit)".
func TestCutOffAtExitSaidOnce(t *testing.T) {
	h := newHanger(t)
	var l logs
	n := New([]*Sink{mustParse(t, h.srv.URL)}, fast(&l))
	n.Send(msg(KindRunEnd))
	<-h.entered
	n.Close(within(t, 0))
	if log := l.String(); !strings.Contains(log, `"run_end" not delivered: cut off at exit`) || strings.Count(log, "cut off at exit") != 1 {
		t.Errorf("log:\n%s", log)
	}
}

// The formats: ntfy gets its JSON publish with a bearer token, Slack its
// {"text"} with mrkdwn escaped, the webhook basic auth from userinfo.
func TestFormats(t *testing.T) {
	srv := newRecorder(t, func(int) int { return 200 })
	hostport := strings.TrimPrefix(srv.srv.URL, "http://")
	n := New([]*Sink{
		mustParse(t, "ntfy+http://:tk_SECRET1@"+hostport+"/sub/topic-SECRET2"),
		mustParse(t, "slack+http://"+hostport+"/services/T0/B0/SECRET3"),
		mustParse(t, "http://alice:SECRET4@"+hostport+"/hook"),
	}, Options{})
	m := msg(KindGuardDenied)
	m.Title, m.Text, m.Severity = "wiggum: <denied> & “quoted”", "`git push --force` <b>", SeverityError
	n.Send(m)
	n.Close(within(t, time.Minute))
	if srv.count() != 3 {
		t.Fatalf("%d requests", srv.count())
	}
	byPath := map[string]received{}
	for _, r := range srv.reqs {
		byPath[r.Path] = r
	}
	nt := byPath["/sub/"]
	var pub struct {
		Topic, Title, Message string
		Priority              int
		Tags                  []string
	}
	if err := json.Unmarshal(nt.Body, &pub); err != nil || pub.Topic != "topic-SECRET2" || pub.Title != m.Title || pub.Priority != 5 || !strings.HasPrefix(pub.Message, m.Text) || nt.Auth != "Bearer tk_SECRET1" {
		t.Errorf("ntfy: %+v %q, %v", pub, nt.Auth, err)
	}
	sl := byPath["/services/T0/B0/SECRET3"]
	var slack map[string]string
	if err := json.Unmarshal(sl.Body, &slack); err != nil || slack["text"] != "*wiggum: &lt;denied&gt; &amp; “quoted”* · repo\n`git push --force` &lt;b&gt;" {
		t.Errorf("slack: %q, %v", slack["text"], err)
	}
	if wh := byPath["/hook"]; !strings.HasPrefix(wh.Auth, "Basic ") {
		t.Errorf("webhook auth %q", wh.Auth)
	}
}

// No secret of a destination appears in its name, its parse errors, its
// delivery errors or the logs - whatever fails.
func TestSecretsNeverShown(t *testing.T) {
	broken := newRecorder(t, func(int) int { return 500 })
	h := newHanger(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	deadAddr := closed.Listener.Addr().String()
	closed.Close()
	secrets := []string{"pw-SECRET-1", "SECRETTOKEN2", "SECRET3xyz", "tk_SECRET4", "SECRETTOPIC5", "abcd1234efgh5678"}
	raw := []string{
		"http://user:pw-SECRET-1@" + strings.TrimPrefix(broken.srv.URL, "http://") + "/hook?token=SECRETTOKEN2&x=1",
		"slack+http://" + deadAddr + "/services/T1/B1/SECRET3xyz",
		"ntfy+http://:tk_SECRET4@" + strings.TrimPrefix(h.srv.URL, "http://") + "/SECRETTOPIC5",
		"http://" + deadAddr + "/api/webhooks/123/abcd1234efgh5678",
	}
	var shown []string
	var sinks []*Sink
	for _, r := range raw {
		s := mustParse(t, r)
		shown = append(shown, s.String())
		sinks = append(sinks, s)
	}
	for _, bad := range []string{"ftp://u:pw-SECRET-1@host/SECRETTOKEN2", "http://[::1:pw-SECRET-1", "ntfy://:tk_SECRET4@host/", "mailto:SECRETTOKEN2@x", "ftp:pw-SECRET-1"} {
		_, err := Parse(bad)
		if err == nil {
			t.Errorf("Parse(%q) accepted", bad)
			continue
		}
		shown = append(shown, err.Error())
	}
	var l logs
	o := fast(&l)
	o.Timeout = 50 * time.Millisecond
	n := New(sinks, o)
	n.Send(msg(KindStoryFailed))
	for _, s := range n.Close(within(t, time.Minute)) {
		shown = append(shown, fmt.Sprintf("%+v", s))
	}
	shown = append(shown, l.String())
	all := strings.Join(shown, "\n")
	for _, s := range secrets {
		if strings.Contains(all, s) {
			t.Errorf("secret %q shown:\n%s", s, all)
		}
	}
	hp := func(u string) string { return strings.TrimPrefix(u, "http://") }
	for i, want := range []string{
		"http://***@" + hp(broken.srv.URL) + "/hook?token=***&x=***",
		"slack+http://" + deadAddr + "/services/***/***/***",
		"ntfy+http://***@" + hp(h.srv.URL) + "/***",
		"http://" + deadAddr + "/api/webhooks/123/***",
	} {
		if shown[i] != want {
			t.Errorf("destination %d shown as %q, want %q", i, shown[i], want)
		}
	}
	for _, want := range []string{"HTTP 500", "no answer within the timeout"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q missing from the log:\n%s", want, all)
		}
	}
	if _, err := net.Dial("tcp", deadAddr); err == nil {
		t.Log("the dead address came back to life; the refused-connection case was not exercised")
	}
}

func TestParse(t *testing.T) {
	for raw, want := range map[string]string{
		"https://example.com/x":                    FormatWebhook,
		"http://127.0.0.1:8080":                    FormatWebhook,
		"https://ntfy.sh/mytopic":                  FormatNtfy,
		"ntfy://ntfy.example.org/t":                FormatNtfy,
		"https://hooks.slack.com/services/A/B/C":   FormatSlack,
		"slack://chat.example.org/hooks/abc":       FormatSlack,
		"slack+http://127.0.0.1:9/hooks/abc":       FormatSlack,
		"ntfy+http://127.0.0.1:9/topic?ignored=1":  FormatNtfy,
		"HTTPS://EXAMPLE.COM/upper-case-is-fine/x": FormatWebhook,
	} {
		s, err := Parse(raw)
		if err != nil || s.Format != want {
			t.Errorf("Parse(%q) = %v, %v; want %s", raw, s, err, want)
		}
	}
	s := mustParse(t, "ntfy://ntfy.sh/alerts")
	if s.endpoint != "https://ntfy.sh/" || s.topic != "alerts" {
		t.Errorf("ntfy endpoint %q topic %q", s.endpoint, s.topic)
	}
	for _, bad := range []string{"", "example.com/hook", "ws://x/y", "https://", "ntfy://ntfy.sh"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// waitFor polls cond until it holds, failing the test if it never does.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition never met")
		}
	}
}

// Command lines recorded for others to read carry --notify destinations
// redacted, parseable or not.
func TestRedactArgs(t *testing.T) {
	in := []string{"wiggum", "run", "--notify", "https://u:pw-SECRET@example.com/hook?token=SECRET2", "--notify=ntfy://ntfy.sh/SECRET-topic",
		"--notify", "desktop", "--notify", "bogus:SECRET3", "--plan", "p.md", "--notify"}
	got := RedactArgs(in)
	want := []string{"wiggum", "run", "--notify", "https://***@example.com/hook?token=***", "--notify=ntfy://ntfy.sh/***",
		"--notify", "desktop", "--notify", "***", "--plan", "p.md", "--notify"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if in[3] != "https://u:pw-SECRET@example.com/hook?token=SECRET2" {
		t.Error("RedactArgs changed its input")
	}
}

// within is a context for Close that ends after d (or at the test's end).
func within(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}
