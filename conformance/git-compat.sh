#!/usr/bin/env bash
# Runs the whole test suite against the newest git that Debian offers
# (unstable's source package, built here), twice: as released, and built
# as git 3.0 will behave (WITH_BREAKING_CHANGES: among others, every new
# repository keeps its refs in a reftable). CI runs the suite on the
# machine's own git; this is how wiggum is checked against what users run
# next - the reftable and lock-contention fixes of 2026-11-27 came from it.
#
# Usage: conformance/git-compat.sh [GO-TEST-ARGS...]
#   default: every package but conformance itself, whose agent CLIs run
#   their shell commands with the machine's own git whatever PATH says
#   (Codex's shell did, here: git 2.39 then fails on a reftable repository)
# Needs root (apt-get), the Debian mirror and ~10 minutes on 2 cores per
# build; the builds are kept in ${WIGGUM_GIT_CACHE:-$HOME/.cache/wiggum-git}
# and reused. Exits non-zero when either run fails; the logs are in the
# cache directory.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
cache=${WIGGUM_GIT_CACHE:-$HOME/.cache/wiggum-git}
mkdir -p "$cache"
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046
	set -- $(go list ./... | grep -v '/conformance$')
fi

if ! ls "$cache"/git_*.orig.tar.xz > /dev/null 2>&1; then
	echo "deb-src http://deb.debian.org/debian sid main" > /etc/apt/sources.list.d/wiggum-git-src.list
	apt-get update -qq
	apt-get install -y -qq build-essential zlib1g-dev libcurl4-openssl-dev libexpat1-dev libssl-dev > /dev/null
	(cd "$cache" && apt-get source --download-only git > /dev/null)
fi
tarball=$(ls "$cache"/git_*.orig.tar.xz | sort -V | tail -1)
version=$(basename "$tarball" | sed 's/^git_\(.*\)\.orig\.tar\.xz$/\1/')
flags=(NO_TCLTK=1 NO_PERL=1 NO_PYTHON=1 NO_GETTEXT=1 NO_RUST=1)

# build NAME [MAKE-FLAGS...]: git $version into $cache/NAME-$version.
build() {
	local name=$1 prefix="$cache/$1-$version"
	shift
	if [ -x "$prefix/bin/git" ]; then
		return
	fi
	echo "building git $version ($name) into $prefix"
	rm -rf "$cache/src-$name"
	mkdir -p "$cache/src-$name"
	tar -xJf "$tarball" -C "$cache/src-$name" --strip-components=1
	make -C "$cache/src-$name" -j"$(nproc)" prefix="$prefix" "${flags[@]}" "$@" install > "$cache/build-$name.log" 2>&1 ||
		{ echo "the build failed: $cache/build-$name.log" >&2; exit 1; }
	rm -rf "$cache/src-$name"
}
build released
build git3 WITH_BREAKING_CHANGES=YesPlease

fail=0
for name in released git3; do
	bin="$cache/$name-$version/bin"
	echo "== $("$bin/git" version) ($name)"
	if [ "$name" = git3 ]; then
		d=$(mktemp -d)
		"$bin/git" init -q "$d/r"
		[ -d "$d/r/.git/reftable" ] || { echo "the git 3 build does not make reftable repositories" >&2; exit 1; }
		rm -rf "$d"
	fi
	if (cd "$repo" && PATH="$bin:$PATH" go test -count=1 "$@") > "$cache/test-$name.log" 2>&1; then
		echo "passed ($cache/test-$name.log)"
	else
		fail=1
		echo "FAILED ($cache/test-$name.log):"
		grep -E '^(--- FAIL|FAIL)' "$cache/test-$name.log" | head -20
	fi
done
exit $fail
