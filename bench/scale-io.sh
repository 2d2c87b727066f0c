#!/usr/bin/env bash
# The scale curves of what grows with input, not with the repository
# (issue 10, item 5), each against a baseline measured in the same run:
#
#   hooks:  `wiggum hook claude` on PostToolUse payloads of 1 KB, 1 MB and
#           100 MB against a minimal Go program that reads and decodes the
#           same payload (bench/hookbench/minimal); wall and CPU time, and
#           the peak RSS of each process (GNU time's %M: wait4's ru_maxrss)
#   events: `wiggum status --json` and `wiggum watch --once` on the state a
#           month of runs leaves (30 runs a day of 25 stories: the event
#           log and the commit journal), at 1, 7 and 30 days; watch against
#           a minimal Go program decoding the last run's lines (what a view
#           of the current run needs), status against itself at 1 day -
#           flat means it does not grow with the log
#
# usage: bench/scale-io.sh            (RUNS=20 per command and size)
# Results: a table on stdout, bench/scale-io.tsv and bench/scale-io.svg.
# Needs GNU time (/usr/bin/time; Debian: apt-get install time).
set -euo pipefail
export CGO_ENABLED=0
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/wiggum-scaleio.XXXXXX)
trap 'rm -rf "$work"' EXIT
[ -x /usr/bin/time ] || { echo "bench: needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
cd "$here"
go build -o "$work/wiggum" ./cmd/wiggum
go build -o "$work/scaleio" ./bench/scaleio
go build -o "$work/scalecurve" ./bench/scalecurve
go build -o "$work/hookmin" ./bench/hookbench/minimal
go build -o "$work/logmin" ./bench/watchbench/minimal
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
git init -q -b main "$work/repo"
git -C "$work/repo" -c user.name=b -c user.email=b@example.com commit -q --allow-empty -m init
runs=${RUNS:-20}
tsv="$here/bench/scale-io.tsv"
printf 'case\top\twiggum\tbaseline\tbefore\twiggum_cpu_ms\tbaseline_cpu_ms\tbefore_cpu_ms\n' > "$tsv"
echo "machine: $(nproc) cores, $(uname -sr); load before: $(uptime | sed 's/.*load average: //')"
echo "== hook latency by payload size (median of ${runs} runs; 5 at 100 MB; RSS: the largest)"
"$work/scaleio" hooks -wiggum "$work/wiggum" -minimal "$work/hookmin" -dir "$work/repo" -n "$runs" -tsv "$tsv"
echo "== status and watch by repository age (median of $runs runs)"
"$work/scaleio" events -wiggum "$work/wiggum" -minimal "$work/logmin" -dir "$work/repo" -n "$runs" -tsv "$tsv"
echo "load after: $(uptime | sed 's/.*load average: //')"
"$work/scalecurve" plot "$tsv" "$here/bench/scale-io.svg"
echo "wrote bench/scale-io.tsv and bench/scale-io.svg"
