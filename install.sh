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
# `./install.sh && wiggum demo` must run this wiggum. When $bindir is not on
# PATH (a fresh machine: Go's own bin is, GOPATH/bin is not), a link goes
# into the first of ~/.local/bin, ~/bin, /usr/local/bin that is on PATH and
# writable - never over a file that is not a link of ours.
case ":$PATH:" in
*":$bindir:"*) ;;
*)
	linked=""
	for d in "${HOME:-/nonexistent}/.local/bin" "${HOME:-/nonexistent}/bin" /usr/local/bin; do
		case ":$PATH:" in *":$d:"*) ;; *) continue ;; esac
		[ -d "$d" ] && [ -w "$d" ] || continue
		if [ -e "$d/wiggum" ] || [ -L "$d/wiggum" ]; then
			[ "$(readlink "$d/wiggum" 2>/dev/null)" = "$bindir/wiggum" ] || continue
		fi
		ln -sf "$bindir/wiggum" "$d/wiggum" && linked="$d/wiggum" && break
	done
	if [ -n "$linked" ]; then
		echo "linked $linked -> $bindir/wiggum ($bindir is not on your PATH)"
	else
		echo "note: $bindir is not on your PATH, so 'wiggum' is not found; add it with:  export PATH=\"$bindir:\$PATH\""
	fi
	;;
esac
# Another wiggum earlier on PATH would answer 'wiggum' instead of this one.
if found=$(command -v wiggum 2>/dev/null) && [ -n "$found" ]; then
	real=$(readlink -f "$found" 2>/dev/null || echo "$found")
	if [ "$real" != "$(readlink -f "$bindir/wiggum" 2>/dev/null || echo "$bindir/wiggum")" ]; then
		echo "note: 'wiggum' on your PATH is $found, not the one just installed: remove it or put $bindir first on PATH" >&2
	fi
fi
