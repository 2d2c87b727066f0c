#!/bin/sh
# Times `wiggum hook claude` against a minimal Go program that only reads
# stdin and decodes the JSON, on the same payloads in the same run, and
# prints the ratios (target: within 1.5x). Usage: bench/hooks.sh [RUNS]
set -eu
# Build as install.sh does: static, no cgo (os/user via terminfo would
# otherwise link libc dynamically and add the loader to every start).
export CGO_ENABLED=0
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/wiggum" ./cmd/wiggum
go build -o "$tmp/minimal" ./bench/hookbench/minimal
go build -o "$tmp/linked" ./bench/hookbench/linked
go build -o "$tmp/hookbench" ./bench/hookbench
git init -q "$tmp/repo"
mkdir -p "$tmp/repo/src"
"$tmp/hookbench" -wiggum "$tmp/wiggum" -baseline "$tmp/minimal" -linked "$tmp/linked" -dir "$tmp/repo" -n "${1:-300}"
