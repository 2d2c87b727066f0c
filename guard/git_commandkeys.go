package guard

import "strings"

// CommandKey reports whether git runs the value of the configuration key
// (lower case, "section.subsection.name") as a command of its own: on
// every status (core.fsmonitor), on add and checkout (a filter's clean and
// smudge), on a diff, a fetch, a signed commit, a credential prompt -
// wiggum's own git commands included, where no hook of an agent sees it.
// include.path counts too: an included file may set any of them.
func CommandKey(key, value string) bool {
	if strings.TrimSpace(value) == "" {
		return false // an empty value runs nothing (credential.helper= resets the list)
	}
	section, rest, _ := strings.Cut(key, ".")
	name := rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		name = rest[i+1:]
	}
	sub := rest != name
	switch section {
	case "core":
		switch name {
		case "fsmonitor":
			switch strings.ToLower(strings.TrimSpace(value)) {
			case "", "true", "false", "yes", "no", "on", "off", "1", "0":
				return false // the built-in daemon, or none
			}
			return true
		case "sshcommand", "pager", "editor", "askpass", "alternaterefscommand", "gitproxy":
			return true
		}
	case "sequence":
		return name == "editor"
	case "diff":
		return (!sub && name == "external") || (sub && (name == "textconv" || name == "command"))
	case "merge":
		return sub && name == "driver"
	case "mergetool", "difftool", "browser", "man":
		return sub && (name == "cmd" || name == "path")
	case "filter":
		return sub && (name == "clean" || name == "smudge" || name == "process")
	case "credential":
		return name == "helper"
	case "gpg":
		return name == "program"
	case "uploadpack":
		return name == "packobjectshook"
	case "remote":
		return sub && (name == "uploadpack" || name == "receivepack" || name == "vcs")
	case "protocol":
		return sub && name == "allow" && strings.HasPrefix(rest, "ext.") && !strings.EqualFold(strings.TrimSpace(value), "never")
	case "include":
		return name == "path"
	case "includeif":
		return sub && name == "path"
	case "alias":
		return strings.HasPrefix(strings.TrimSpace(value), "!")
	case "pager", "tar":
		return true
	case "interactive":
		return name == "difffilter"
	case "web":
		return name == "browser"
	}
	return false
}
