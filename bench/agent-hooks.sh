#!/bin/sh
# Times a real Claude Code Bash tool call (PreToolUse + command + PostToolUse)
# with and without wiggum's hooks installed, against the conformance suite's
# scripted model server, and prints the milliseconds the hooks add per tool
# call (medians; both variants measured in the same run, interleaved).
# Needs the client: conformance/install-clients.sh.
# Usage: bench/agent-hooks.sh [CALLS-PER-SESSION] [SESSIONS] [BEFORE-REV]
#   BEFORE-REV   also time the hooks of wiggum built from that git revision,
#                interleaved with the rest (before/after from one run)
set -eu
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
cache=${WIGGUM_AGENT_CACHE:-$HOME/.cache/wiggum-agents}
claude="$cache/@anthropic-ai+claude-code@2.1.332/node_modules/.bin/claude"
if [ ! -x "$claude" ]; then
	echo "claude is not installed in $cache: run conformance/install-clients.sh" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/before-src" 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/wiggum" ./cmd/wiggum
before=""
if [ -n "${3:-}" ]; then
	git worktree add --detach -q "$tmp/before-src" "$3"
	(cd "$tmp/before-src" && go build -o "$tmp/before/wiggum" ./cmd/wiggum)
	before="$tmp/before/wiggum"
fi
go build -o "$tmp/agenthooks" ./bench/agenthooks
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$tmp/agenthooks" -claude "$claude" -wiggum "$tmp/bin/wiggum" -dir "$tmp" -calls "${1:-21}" -sessions "${2:-6}" -before "$before"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
