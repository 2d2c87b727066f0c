#!/bin/bash
# bench/quiet.sh: every target's benchmark, one after another, for a rerun
# on a quiet machine (nothing else running). Each script times this
# checkout against BEFORE (a git revision, built with CGO_ENABLED=0 as
# install.sh builds) in the same run where it can; remote.sh is run for
# this build, then BEFORE, then this build again. The loop, whose ratio
# swings with the file system's state, runs three times, and once more as
# an A/B of the two builds on tmpfs (40 stories, 4 interleaved rounds),
# where the file system cannot move it.
#
# Usage: bench/quiet.sh BEFORE-REV [OUT-DIR]
# Writes one log per benchmark and a times file (start, end, load) to
# OUT-DIR (default: a new temporary directory, printed). Takes ~12 min.
set -u
before=${1:?usage: bench/quiet.sh BEFORE-REV [OUT-DIR]}
cd "$(dirname "$0")/.."
out=${2:-$(mktemp -d)}
mkdir -p "$out"
export CGO_ENABLED=0
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/src" 2>/dev/null; rm -rf "$tmp" /dev/shm/wiggum-quiet-ab' EXIT
git worktree add --detach -q "$tmp/src" "$before" || exit 2
(cd "$tmp/src" && go build -o "$tmp/before" ./cmd/wiggum) || exit 2
go build -o "$tmp/after" ./cmd/wiggum || exit 2

run() {
	name=$1
	shift
	echo "=== $name $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/times"
	"$@" >"$out/$name.log" 2>&1
	echo "    end $(date -u +%T) rc $?" | tee -a "$out/times"
}

# loop_ab: the loop's per-run time of both builds on tmpfs, interleaved.
loop_ab() {
	local agent='cat > /dev/null; echo "$WIGGUM_STORY" >> work.txt' base=/dev/shm/wiggum-quiet-ab round b d
	for round in 1 2 3 4; do
		for b in before after; do
			rm -rf "$base" && mkdir -p "$base" && d=$base/repo && mkdir "$d" || return 1
			(
				cd "$d" || exit 1
				git init -q && git config user.email bench@example.com && git config user.name bench
				awk 'BEGIN { print "# Plan\n"; for (i = 1; i <= 40; i++) printf "- [ ] US-%d: story %d\n", i, i }' >plan.md
				echo start >work.txt && git add -A && git commit -qm init
				TIMEFORMAT="$b round $round: %R s wall, %U s user, %S s sys"
				time "$tmp/$b" run --plan plan.md --agent-cmd "$agent" -q >/dev/null
			)
		done
	done
	rm -rf "$base"
}

run hooks bench/hooks.sh 300 "$before"
run loop1 env CURVE= BEFORE="$before" ROUNDS=5 bench/loop.sh
run scale env WIGGUM_BEFORE="$tmp/before" bench/scale.sh 1000 10000 100000
run parallel env BASE="$before" ROUNDS=5 bench/parallel.sh
run loop2 env CURVE= BEFORE="$before" ROUNDS=5 bench/loop.sh
run remote-after env WIGGUM_BIN="$tmp/after" bench/remote.sh
run remote-before env WIGGUM_BIN="$tmp/before" bench/remote.sh
run remote-after2 env WIGGUM_BIN="$tmp/after" bench/remote.sh
run loop3 env CURVE= BEFORE="$before" ROUNDS=5 bench/loop.sh
run loop-tmpfs loop_ab
run agenthooks bench/agent-hooks.sh 21 6 "$before"
echo "logs in $out"
