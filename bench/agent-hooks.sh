#!/bin/sh
# Times a real Claude Code Bash tool call (PreToolUse + command + PostToolUse)
# with and without wiggum's hooks installed, against the conformance suite's
# scripted model server, and prints the milliseconds the hooks add per tool
# call (medians; both variants measured in the same run, interleaved).
# Needs the client: conformance/install-clients.sh.
# Usage: bench/agent-hooks.sh [CALLS-PER-SESSION] [SESSIONS]
set -eu
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
cache=${WIGGUM_AGENT_CACHE:-$HOME/.cache/wiggum-agents}
claude="$cache/@anthropic-ai+claude-code@2.1.330/node_modules/.bin/claude"
if [ ! -x "$claude" ]; then
	echo "claude is not installed in $cache: run conformance/install-clients.sh" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/bin/wiggum" ./cmd/wiggum
go build -o "$tmp/agenthooks" ./bench/agenthooks
"$tmp/agenthooks" -claude "$claude" -wiggum "$tmp/bin/wiggum" -dir "$tmp" -calls "${1:-21}" -sessions "${2:-6}"
