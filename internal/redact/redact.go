// Package redact masks what may be a secret in text wiggum records or sends
// on - a command the guard denied, an agent's tool call, a failure's
// message - so that the event log, wiggum watch and report, and the
// notifications that leave the machine never carry a credential whole.
// It knows only forms that are rarely anything but a secret.
package redact

import (
	"regexp"
	"strings"
	"sync"
)

// Mask replaces what a rule hides.
const Mask = "***"

// rule is one form of secret: what re matches is replaced by repl, whose
// $1 keeps what says which kind of secret it was.
type rule struct {
	re   *regexp.Regexp
	repl string
}

// rules are compiled on first use: a hook call that records nothing pays
// nothing for them.
var rules = sync.OnceValue(func() []rule {
	r := func(expr, repl string) rule { return rule{regexp.MustCompile(expr), repl} }
	return []rule{
		// A URL's user information: scheme://user:pass@host, or a token
		// alone before the @. Nothing before the host holds a '/'.
		r(`(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#'"<>]*@`, "${1}"+Mask+"@"),
		// A query value whose name says it is one: ?access_token=,
		// &api_key=, X-Amz-Signature=, sig=, password= ...
		r(`(?i)([?&][\w.-]*(?:token|key|secret|sig|signature|password|passwd|pwd|auth|credential|session)[\w.-]*=)[^&\s#'"<>]+`, "${1}"+Mask),
		// Tokens with a fixed prefix: GitHub's, OpenAI's and Anthropic's
		// sk-, Slack's, AWS access keys.
		r(`(gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,}`, "${1}"+Mask),
		r(`\b(sk-)[A-Za-z0-9_-]{20,}`, "${1}"+Mask),
		r(`\b(xox[abprs]-)[A-Za-z0-9-]{10,}`, "${1}"+Mask),
		r(`\b(AKIA)[0-9A-Z]{16}\b`, "${1}"+Mask),
		// An HTTP Authorization header's credentials, and a bearer token.
		r(`(?i)\b(authorization:\s*(?:basic|bearer|token|bot)\s+)[^\s'"]+`, "${1}"+Mask),
		r(`(?i)\b(bearer\s+)[a-z0-9._~+/=-]{16,}`, "${1}"+Mask),
		// curl -u user:password (--user too): the password.
		r(`(\s(?:-u|--user)(?:\s+|=)['"]?[^\s:'"]+:)[^\s'"]+`, "${1}"+Mask),
		// --password X, --token=X, --api-key X ...
		r(`(?i)(--(?:password|passwd|token|api-key|apikey|secret|access-token|auth-token)(?:=|\s+))(?:"[^"]*"|'[^']*'|[^\s'"]+)`, "${1}"+Mask),
		// An environment variable named for a secret: GITHUB_TOKEN=...,
		// AWS_SECRET_ACCESS_KEY=..., DB_PASSWORD="..."
		r(`\b([A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS)[A-Z0-9_]*=)(?:"[^"]*"|'[^']*'|[^\s'"]+)`, "${1}"+Mask),
	}
})

// triggers are what every rule's match holds: text with none of them
// holds no secret a rule knows, and costs no regular expression (a hook
// that records "npm test" compiles none).
var triggers = []string{"@", "=", "_", "sk-", "xox", "AKIA", "earer", "EARER", "uthorization", "UTHORIZATION", "-u", "--user", "--"}

// Text returns s with every secret it can recognise replaced by Mask.
func Text(s string) string {
	hit := false
	for _, t := range triggers {
		if strings.Contains(s, t) {
			hit = true
			break
		}
	}
	if !hit {
		return s
	}
	for _, r := range rules() {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

// Strings returns ss with Text applied to each, ss itself when none
// changed.
func Strings(ss []string) []string {
	var out []string
	for i, s := range ss {
		if r := Text(s); r != s {
			if out == nil {
				out = append([]string(nil), ss...)
			}
			out[i] = r
		}
	}
	if out == nil {
		return ss
	}
	return out
}
