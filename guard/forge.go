package guard

import (
	"slices"
	"strings"
)

// A forge's command line - GitHub's gh, GitLab's glab, hub - publishes
// without git: gh pr merge merges on the server, gh release create tags
// and releases there, gh repo delete deletes the repository, gh api -X
// POST writes whatever it is given. No git push runs, so git's pre-push
// hook never sees any of it. Like a push, these are the person's to do:
// the guard denies the commands that write to the forge and lets the
// reads (view, list, status, diff, checkout, api GET) through.

// A table of maps here would be built by every wiggum process as it
// starts, hooks included, whose start-up is what a tool call waits for:
// switches are code, built by nobody.

// isForge reports whether base is a forge's command line the guard reads.
func isForge(base string) bool { return base == "gh" || base == "glab" || base == "hub" }

// forgeWrites lists the actions of a gh, glab or hub command group that
// write to the forge ("*": every action); false for a group that does not
// write or is unknown.
func forgeWrites(base, group string) ([]string, bool) {
	switch base + " " + group {
	case "gh pr":
		return []string{"create", "new", "merge", "close", "reopen", "edit", "comment", "review", "ready", "update-branch", "lock", "unlock", "revert"}, true
	case "gh issue":
		return []string{"create", "new", "close", "reopen", "edit", "comment", "delete", "transfer", "lock", "unlock", "pin", "unpin", "develop"}, true
	case "gh release":
		return []string{"create", "new", "delete", "delete-asset", "upload", "edit"}, true
	case "gh repo":
		return []string{"create", "new", "delete", "archive", "unarchive", "rename", "edit", "fork", "sync", "autolink", "deploy-key"}, true
	case "gh workflow":
		return []string{"run", "enable", "disable"}, true
	case "gh run":
		return []string{"rerun", "cancel", "delete"}, true
	case "gh secret":
		return []string{"set", "delete", "remove"}, true
	case "gh variable":
		return []string{"set", "delete", "remove"}, true
	case "gh label":
		return []string{"create", "delete", "edit", "clone"}, true
	case "gh gist":
		return []string{"create", "new", "delete", "edit", "rename"}, true
	case "gh cache":
		return []string{"delete"}, true
	case "gh project":
		return []string{"create", "delete", "edit", "close", "copy", "item-add", "item-create", "item-delete", "item-edit", "item-archive", "field-create", "field-delete", "link", "unlink", "mark-template"}, true
	case "gh codespace":
		return []string{"create", "delete", "edit", "stop", "rebuild"}, true
	case "gh ssh-key":
		return []string{"add", "delete"}, true
	case "gh gpg-key":
		return []string{"add", "delete"}, true
	case "gh attestation":
		return []string{}, true
	case "glab mr":
		return []string{"create", "new", "merge", "accept", "close", "reopen", "update", "note", "comment", "approve", "revoke", "delete", "rebase", "subscribe", "unsubscribe", "todo"}, true
	case "glab issue":
		return []string{"create", "new", "close", "reopen", "update", "note", "comment", "delete", "subscribe", "unsubscribe"}, true
	case "glab release":
		return []string{"create", "new", "delete", "upload"}, true
	case "glab repo":
		return []string{"create", "new", "delete", "archive", "fork", "transfer", "mirror"}, true
	case "glab ci":
		return []string{"run", "retry", "delete", "cancel", "trigger"}, true
	case "glab pipeline":
		return []string{"run", "retry", "delete", "cancel", "trigger"}, true
	case "glab variable":
		return []string{"set", "update", "delete"}, true
	case "glab label":
		return []string{"create", "delete"}, true
	case "glab snippet":
		return []string{"create", "new"}, true
	case "hub pull-request":
		return []string{"*"}, true
	case "hub release":
		return []string{"create", "edit", "delete"}, true
	case "hub issue":
		return []string{"create", "update", "transfer"}, true
	case "hub create":
		return []string{"*"}, true
	case "hub delete":
		return []string{"*"}, true
	case "hub fork":
		return []string{"*"}, true
	case "hub ci-status":
		return []string{}, true
	}
	return nil, false
}

// forgeOptionWithValue reports whether a is a global option of gh or glab
// that takes a value, so that the value is not read as the command group.
func forgeOptionWithValue(a string) bool { return a == "-R" || a == "--repo" || a == "--hostname" }

// forge judges a gh, glab or hub command.
func (w *walk) forge(base string, rest []string) {
	var words []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			words = append(words, rest[i+1:]...)
			i = len(rest)
		case a == "-h" || a == "--help":
			return // the manual: nothing runs
		case forgeOptionWithValue(a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return
	}
	group := words[0]
	if strings.Contains(group, dynamic) {
		w.g.verdict(Ask, "the %s command is only known at run time, so wiggum's guard cannot tell whether it publishes", base)
		return
	}
	if base == "hub" {
		if hubGit(group) {
			w.git(rest) // hub is git's wrapper: hub push is git push
			return
		}
	}
	if group == "api" {
		method := forgeAPIMethod(rest)
		if len(words) > 1 && words[1] == "graphql" && method == "POST" {
			// Every GraphQL call is a POST; only a mutation writes.
			if !slices.ContainsFunc(rest, func(a string) bool { return strings.Contains(a, "mutation") || strings.Contains(a, dynamic) }) {
				return
			}
			method = "graphql mutation"
		}
		if method != "GET" && method != "HEAD" {
			w.denyForge(base, "api "+method)
		}
		return
	}
	actions, ok := forgeWrites(base, group)
	if !ok {
		return
	}
	action := ""
	if len(words) > 1 {
		action = words[1]
	}
	if strings.Contains(action, dynamic) {
		w.g.verdict(Ask, "the %s %s action is only known at run time, so wiggum's guard cannot tell whether it publishes", base, group)
		return
	}
	for _, a := range actions {
		if a == "*" || a == action {
			w.denyForge(base, strings.TrimSpace(group+" "+action))
			return
		}
	}
}

// hubGit reports whether hub runs cmd as git does (hub wraps git): every
// command but hub's own.
func hubGit(cmd string) bool {
	_, own := forgeWrites("hub", cmd)
	return !own && cmd != "api" && cmd != "browse" && cmd != "compare" && cmd != "sync" && cmd != "pr"
}

// forgeAPIMethod is the HTTP method of a gh or glab api call: -X or
// --method, else POST when fields or a body are given, else GET.
func forgeAPIMethod(args []string) string {
	method, body := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-X" || a == "--method":
			if i+1 < len(args) {
				method = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "-X") && len(a) > 2:
			method = a[2:]
		case strings.HasPrefix(a, "--method="):
			method = strings.TrimPrefix(a, "--method=")
		case a == "-f" || a == "-F" || a == "--field" || a == "--raw-field" || a == "--input",
			strings.HasPrefix(a, "--field=") || strings.HasPrefix(a, "--raw-field=") || strings.HasPrefix(a, "--input="),
			strings.HasPrefix(a, "-f") && len(a) > 2, strings.HasPrefix(a, "-F") && len(a) > 2:
			body = true
		}
	}
	method = strings.ToUpper(method)
	switch {
	case strings.Contains(method, dynamic):
		return "(a method known at run time)"
	case method != "":
		return method
	case body:
		return "POST"
	}
	return "GET"
}

// denyForge denies a command that writes to the forge.
func (w *walk) denyForge(base, what string) {
	w.g.verdict(Deny, "%s %s writes to the forge (publishing, as a git push does), which is not allowed during a wiggum session: commit locally and leave it to the person running the loop", base, what)
}
