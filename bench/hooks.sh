#!/bin/sh
# Times `wiggum hook claude` against a minimal Go program that only reads
# stdin and decodes the JSON, on the same payloads in the same run, and
# prints the ratios (target: within 1.3x), each binary's CPU time and minor
# page faults.
#
# Usage: bench/hooks.sh [RUNS] [BEFORE-REV]
#   BEFORE-REV   also time wiggum built from that git revision, interleaved
#                with the rest (before/after figures from one run)
#   WIGGUM_HOOKBENCH_DEPS=1
#                also time the minimal reader with wiggum's dependencies
#                linked: all of them ("deps": every package wiggum's own
#                packages import, no wiggum code), and each group alone -
#                where the start-up cost of the binary comes from
set -eu
# Build as install.sh does: static, no cgo (os/user via terminfo would
# otherwise link libc dynamically and add the loader to every start).
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
gen=$(mktemp -d bench/hookbench/_gen.XXXXXX) # inside the module, for its go.mod
trap 'git worktree remove --force "$tmp/before-src" 2>/dev/null || true; rm -rf "$tmp" "$gen"' EXIT
go build -o "$tmp/wiggum" ./cmd/wiggum
go build -o "$tmp/minimal" ./bench/hookbench/minimal
go build -o "$tmp/linked" ./bench/hookbench/linked
go build -o "$tmp/hookonly" ./bench/hookbench/hookonly
go build -o "$tmp/hookbench" ./bench/hookbench
set -- "${1:-300}" "${2:-}"
extra=""
if [ -n "$2" ]; then
	git worktree add --detach -q "$tmp/before-src" "$2"
	(cd "$tmp/before-src" && go build -o "$tmp/before" ./cmd/wiggum)
	extra="-before $tmp/before"
fi

# reader NAME PATTERN [-v]: the minimal reader with the packages wiggum
# imports that match PATTERN (a grep -E expression; with -v, all but those)
# linked in.
reader() {
	mkdir -p "$gen/$1"
	{
		echo 'package main'
		echo 'import ('
		echo '	"encoding/json"'
		echo '	"io"'
		echo '	"os"'
		# shellcheck disable=SC2086
		grep -E ${3:-} "$2" "$gen/imports" | sed 's/.*/	_ "&"/'
		echo ')'
		echo 'func main() { data, _ := io.ReadAll(os.Stdin); var v map[string]any; _ = json.Unmarshal(data, &v) }'
	} >"$gen/$1/main.go"
	go build -o "$tmp/$1" "./$gen/$1"
	extra="$extra -also $1=$tmp/$1"
}
if [ -n "${WIGGUM_HOOKBENCH_DEPS:-}" ]; then
	mod=$(go list -m)
	# shellcheck disable=SC2046
	go list -f '{{join .Imports "\n"}}' $(go list -deps ./cmd/wiggum | grep "^$mod/") |
		grep -v "^$mod/" | sort -u >"$gen/imports"
	reader deps '.'
	reader otel-sdk '^go\.opentelemetry\.io/otel(/attribute|/codes|/sdk/|/trace$|$)'
	reader net-http '^net/http$'
	reader charm '^(charm\.land/|github\.com/charmbracelet/|github\.com/muesli/)'
	reader kong '^github\.com/alecthomas/kong$'
	reader sh-syntax '^mvdan\.cc/sh/'
	reader html-template '^html/template$'
fi
git init -q "$tmp/repo"
# .ralph: a repository wiggum has run in, where a failure outside a session
# is recorded (in one it never ran in, the hook only answers).
mkdir -p "$tmp/repo/src" "$tmp/repo/.ralph"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
"$tmp/hookbench" -wiggum "$tmp/wiggum" -baseline "$tmp/minimal" -linked "$tmp/linked" -hookonly "$tmp/hookonly" $extra -dir "$tmp/repo" -n "$1"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
