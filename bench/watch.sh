#!/bin/sh
# Times `wiggum watch --once` (plain output of a whole run) on the event log
# of a 1,000-story, 8-worker run, against `cat` of the same log and a
# minimal Go program that decodes every line, in the same run; and the
# full-screen view's first frame (go test -bench FirstFrame). Target: under
# 200 ms to the first output. Usage: bench/watch.sh [RUNS]
set -eu
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/wiggum" ./cmd/wiggum
go build -o "$tmp/minimal" ./bench/watchbench/minimal
go build -o "$tmp/watchbench" ./bench/watchbench
git init -q "$tmp/repo"
"$tmp/watchbench" -wiggum "$tmp/wiggum" -minimal "$tmp/minimal" -dir "$tmp/repo" -n "${1:-30}"
go test -run '^$' -bench FirstFrame -benchtime 20x ./internal/watch | grep -E '^Benchmark'
