// Package notify tells a user away from the terminal what their run is
// doing - over a JSON webhook, ntfy, a Slack-compatible webhook or the
// desktop - without ever slowing the loop: each destination has a bounded
// queue, every request a timeout, failures are retried with back-off, what
// does not fit is dropped and counted, and no secret of a destination's URL
// appears in anything it logs or returns.
package notify

import (
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Formats of a destination.
const (
	FormatWebhook = "webhook" // POST the Message as JSON
	FormatNtfy    = "ntfy"    // POST the text, with Title/Priority/Tags headers
	FormatSlack   = "slack"   // POST {"text": ...}
	FormatDesktop = "desktop" // run notify-send
)

// Sink is one destination, parsed from what the user wrote:
//
//	https://example.com/hook      JSON webhook (http:// too)
//	ntfy://ntfy.sh/TOPIC          ntfy over https (ntfy+http:// for plain http);
//	https://ntfy.sh/TOPIC         ntfy.sh addressed directly is ntfy too;
//	                              ntfy://:TOKEN@host/TOPIC sends a bearer token,
//	                              ntfy://USER:PASS@host/TOPIC basic auth
//	https://hooks.slack.com/...   Slack incoming webhook
//	slack://HOST/PATH             any Slack-compatible webhook over https
//	                              (Mattermost, Rocket.Chat; slack+http:// too)
//	desktop                       notify-send on this machine (desktop:// too)
type Sink struct {
	Format   string
	endpoint string // where to POST; holds the secrets
	user     string
	pass     string
	hasUser  bool
	topic    string // ntfy: published to endpoint, the server's root
	display  string // redacted, safe to print
}

// String is the destination with its secrets replaced by "***".
func (s *Sink) String() string { return s.display }

// URLError is a destination that cannot be used. It never holds the URL's
// secrets.
type URLError struct {
	URL    string // redacted
	Reason string
}

func (e *URLError) Error() string {
	return fmt.Sprintf("notify: %s: %s", e.URL, e.Reason)
}

// Parse reads one destination. Its error names the destination redacted.
func Parse(raw string) (*Sink, error) {
	raw = strings.TrimSpace(raw)
	if raw == "desktop" || raw == "desktop://" {
		if _, err := exec.LookPath("notify-send"); err != nil {
			return nil, &URLError{URL: "desktop", Reason: "desktop notifications need notify-send, which is not in PATH (Debian: apt-get install libnotify-bin)"}
		}
		return &Sink{Format: FormatDesktop, display: "desktop"}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, &URLError{URL: redactRaw(raw), Reason: "not a URL; expected http(s)://, ntfy://, slack:// or desktop (see wiggum run --help)"}
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return nil, &URLError{URL: Redact(u), Reason: fmt.Sprintf("port %s is out of range: a port is 1 to 65535", p)}
	}
	s := &Sink{}
	shown := *u
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	switch scheme {
	case "http", "https":
		switch {
		case host == "ntfy.sh":
			s.Format = FormatNtfy
		case host == "hooks.slack.com":
			s.Format = FormatSlack
		default:
			s.Format = FormatWebhook
		}
	case "ntfy", "ntfy+https", "ntfy+http":
		s.Format, u.Scheme = FormatNtfy, httpScheme(scheme)
	case "slack", "slack+https", "slack+http":
		s.Format, u.Scheme = FormatSlack, httpScheme(scheme)
	default:
		return nil, &URLError{URL: Redact(u), Reason: fmt.Sprintf("unknown scheme %q; expected http(s)://, ntfy://, slack:// or desktop", u.Scheme)}
	}
	if s.Format == FormatNtfy && strings.Trim(u.Path, "/") == "" {
		return nil, &URLError{URL: Redact(u), Reason: "an ntfy destination needs a topic: ntfy://HOST/TOPIC"}
	}
	if u.User != nil {
		s.user, s.hasUser = u.User.Username(), true
		s.pass, _ = u.User.Password()
		u.User = nil
	}
	u.Fragment = ""
	shown.User = nil
	s.display = redactSink(s.Format, &shown, s.hasUser)
	if s.Format == FormatNtfy {
		path := strings.Trim(u.Path, "/")
		i := strings.LastIndexByte(path, '/')
		s.topic = path[i+1:]
		u.Path, u.RawPath, u.RawQuery = "/"+path[:i+1], "", ""
	}
	s.endpoint = u.String()
	return s, nil
}

func httpScheme(scheme string) string {
	if strings.HasSuffix(scheme, "+http") {
		return "http"
	}
	return "https"
}

// Redact returns u with what may be a secret replaced by "***": its user
// information, every query value, and every path segment that looks like
// a token (long, or mixing letters and digits).
func Redact(u *url.URL) string {
	c := *u
	hasUser := c.User != nil
	c.User = nil
	return redactSink(FormatWebhook, &c, hasUser)
}

func redactSink(format string, u *url.URL, hasUser bool) string {
	var b strings.Builder
	b.WriteString(u.Scheme + "://")
	if hasUser {
		b.WriteString("***@")
	}
	b.WriteString(u.Host)
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	for i, seg := range segs {
		if seg == "" && i == len(segs)-1 {
			break
		}
		b.WriteByte('/')
		switch {
		// A Slack hook's path and an ntfy topic are the secret itself.
		case format == FormatSlack && i > 0, format == FormatNtfy:
			b.WriteString("***")
		case secretLike(seg):
			b.WriteString("***")
		default:
			b.WriteString(seg)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, url.QueryEscape(k)+"=***")
		}
		slices.Sort(keys)
		b.WriteString("?" + strings.Join(keys, "&"))
	}
	return b.String()
}

// secretLike is a path segment that is probably a token: 16 characters or
// more, or 8 or more mixing letters and digits.
func secretLike(seg string) bool {
	if len(seg) >= 16 {
		return true
	}
	var letter, digit bool
	for _, r := range seg {
		letter = letter || unicode.IsLetter(r)
		digit = digit || unicode.IsDigit(r)
	}
	return len(seg) >= 8 && letter && digit
}

// redactRaw shows as much of an unparseable destination as is safe: its
// scheme, if it has one, and all of it when nothing follows the scheme.
func redactRaw(raw string) string {
	raw = strings.TrimSpace(raw)
	if i := strings.Index(raw, "://"); i > 0 && i < 20 && !strings.ContainsAny(raw[:i], "@:/?") {
		if raw[i+3:] == "" {
			return raw
		}
		return raw[:i] + "://***"
	}
	return "***"
}

// validPort reports whether p, a URL's port, is one a connection can use.
func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// Shown is raw, a destination as the user wrote it, with its secrets
// replaced by "***" - whether or not it parses.
func Shown(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		if r := strings.TrimSpace(raw); r == "desktop" || r == "desktop://" {
			return r
		}
		return redactRaw(raw)
	}
	format := FormatWebhook
	switch s := strings.ToLower(u.Scheme); {
	case strings.HasPrefix(s, "ntfy") || strings.ToLower(u.Hostname()) == "ntfy.sh":
		format = FormatNtfy
	case strings.HasPrefix(s, "slack") || strings.ToLower(u.Hostname()) == "hooks.slack.com":
		format = FormatSlack
	}
	hasUser := u.User != nil
	u.User = nil
	return redactSink(format, u, hasUser)
}

// RedactArgs returns a command line with the destination of every
// --notify flag in it Shown, for records other users can read (the lock
// holder's command line, wiggum status).
func RedactArgs(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		switch {
		case a == "--notify" && i+1 < len(out):
			out[i+1] = Shown(out[i+1])
		case strings.HasPrefix(a, "--notify="):
			out[i] = "--notify=" + Shown(strings.TrimPrefix(a, "--notify="))
		}
	}
	return out
}
