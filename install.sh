#!/bin/sh
# Builds wiggum from this checkout with the local Go toolchain and installs it
# where `go install` would: $(go env GOBIN), else $(go env GOPATH)/bin.
# Safe to run again: it replaces the binary atomically.
set -eu
cd "$(dirname "$0")"
command -v go >/dev/null 2>&1 || { echo "install.sh: Go is not installed (https://go.dev/dl/)" >&2; exit 1; }
command -v git >/dev/null 2>&1 || { echo "install.sh: git is not installed" >&2; exit 1; }
bindir=$(go env GOBIN)
[ -n "$bindir" ] || bindir="$(go env GOPATH)/bin"
mkdir -p "$bindir"
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
tmp="$bindir/.wiggum.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# No cgo: a static binary starts faster (no dynamic loader), which every hook
# call pays.
CGO_ENABLED=0 go build -trimpath -ldflags "-X github.com/wiggum-dev/wiggum/internal/cli.Version=$version" -o "$tmp" ./cmd/wiggum
mv -f "$tmp" "$bindir/wiggum"
echo "installed wiggum $version to $bindir/wiggum"
case ":$PATH:" in
*":$bindir:"*) ;;
*) echo "note: $bindir is not on your PATH; add it with:  export PATH=\"$bindir:\$PATH\"" ;;
esac
