#!/bin/sh
# bench/parallel.sh: wall time of `wiggum run --workers N` over S stories
# whose agent sleeps T seconds, for N = 1, 2, 4, 8 (WORKERS), against the
# ideal (S/N)·T - the baseline, computed for the same S and T - and the
# serial run measured in the same session; efficiency is ideal / wall.
# Also prints the measured landing cost per story (merge, plan tick and
# worktree removal under the repository mutex: median and max) and how long
# a finished story waited for the merge coordinator (median and max), read
# from the merged events, the time a worker spends between two of its
# agents (median and max, from the iteration events), and the load average
# before and after, and (with strace installed) how many git processes one
# run at N=4 starts. DESIGN.md:
# wall time close to (stories / N) x agent time (efficiency at least 0.9 at
# N=4), plus a bounded, measured cost per story.
#
# BASE=<git revision> also builds wiggum at that revision and runs it
# interleaved with the current tree (same repositories, same rounds), and
# prints its efficiency and the current wall time as a ratio to it: a
# before/after on the same machine under the same load.
set -eu
# Build as install.sh does: static, no cgo (os/user via terminfo would
# otherwise link libc dynamically and add the loader to every start).
export CGO_ENABLED=0
S=${S:-8}
T=${T:-1}
ROUNDS=${ROUNDS:-2}
WORKERS=${WORKERS:-1 2 4 8}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/wiggum" ./cmd/wiggum)
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base"
	(cd "$here" && git archive "$BASE" | tar -x -C "$tmp/base")
	(cd "$tmp/base" && go build -o "$tmp/base-bin/wiggum" ./cmd/wiggum)
fi
# The build timed is the wiggum on PATH, as for a user who installed it
# (otherwise each run links itself into PATH and says so); the base build
# runs with its own directory first on PATH (withpath).
export PATH="$tmp:$PATH"
withpath() { PATH="$(dirname "$1"):$PATH" "$@"; }

export GIT_CONFIG_NOSYSTEM=1 HOME="$tmp" GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
	GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

now() { date +%s%N; }

cat > "$tmp/agent.sh" <<AGENT
cat > /dev/null
sleep $T
echo "\$WIGGUM_STORY" > "f-\$WIGGUM_STORY.txt"
AGENT

mkrepo() {
	rm -rf "$1" && mkdir -p "$1" && cd "$1"
	git init -q
	i=1
	while [ $i -le "$S" ]; do echo "- [ ] US-$i: story $i"; i=$((i + 1)); done > plan.md
	git add plan.md && git commit -q -m init
}

# median and max of one numeric field of the best round's merged events
stat() {
	grep -h '"event":"merged"' "$tmp/best.jsonl" 2>/dev/null | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" | sort -n |
		awk '{v[NR] = $1} END {if (NR) printf "%.1f / %.1f ms", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR]; else print "n/a"}'
}

# gap FILE: median and max, over every worker, of the time from one of its
# attempts' end to its next attempt's start (iteration_end to
# iteration_start of the same worker in the event log): what a worker
# spends between two agents - handing a story over, getting its next
# worktree. Seconds since midnight (a run across midnight is left out).
gap() {
	grep -h '"event":"iteration_\(start\|end\)"' "$1" 2>/dev/null |
		sed -n 's/.*"event":"iteration_\([a-z]*\)".*"time":"[0-9-]*T\([0-9]*\):\([0-9]*\):\([0-9.]*\)Z".*"worker":\([0-9]*\).*/\1 \5 \2 \3 \4/p' |
		awk '{t = $3 * 3600 + $4 * 60 + $5} $1 == "end" {e[$2] = t} $1 == "start" && ($2 in e) {g = (t - e[$2]) * 1000; if (g >= 0) print g; delete e[$2]}' | sort -n |
		awk '{v[NR] = $1} END {if (NR) printf "%.1f / %.1f ms", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR]; else print "n/a"}'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "S=$S stories, agent sleeps T=${T}s, best of $ROUNDS round(s)"
serial=0
# one BINARY N: a fresh repository, one run; prints its wall time in ns
one() {
	mkrepo "$tmp/repo-$2"
	t0=$(now)
	withpath "$1" run --plan plan.md --agent-cmd "sh $tmp/agent.sh" --workers "$2" -q > /dev/null
	t1=$(now)
	[ "$(grep -c '^- \[x\]' plan.md)" -eq "$S" ] || { echo "wiggum did not finish every story" >&2; exit 1; }
	[ "$(git ls-files 'f-*' | wc -l)" -eq "$S" ] || { echo "a story's work is missing" >&2; exit 1; }
	echo $((t1 - t0))
}

for n in $WORKERS; do
	best=0
	bbest=0
	r=1
	while [ $r -le "$ROUNDS" ]; do
		if [ -n "${BASE:-}" ]; then
			w=$(one "$tmp/base-bin/wiggum" "$n")
			if [ $bbest -eq 0 ] || [ $w -lt $bbest ]; then
				bbest=$w
				cp "$tmp/repo-$n/.ralph/wiggum/events.jsonl" "$tmp/bbest.jsonl"
			fi
		fi
		w=$(one "$tmp/wiggum" "$n")
		if [ $best -eq 0 ] || [ $w -lt $best ]; then
			best=$w
			cp "$tmp/repo-$n/.ralph/wiggum/events.jsonl" "$tmp/best.jsonl"
		fi
		r=$((r + 1))
	done
	[ "$n" -eq 1 ] && serial=$best
	ideal=$(echo "(($S + $n - 1) / $n) * $T * 1000000000" | bc)
	land=$(stat land_ms)
	queued=$(stat queued_ms)
	printf 'workers %d: %6.2f s wall, ideal (S/N)·T %5.2f s, efficiency %.2f (%.2fx ideal), %.2fx faster than serial; per story: landing (median / max) %s, wait for the coordinator %s; between two agents of a worker %s\n' \
		"$n" "$(echo "$best / 1000000000" | bc -l)" "$(echo "$ideal / 1000000000" | bc -l)" \
		"$(echo "$ideal / $best" | bc -l)" "$(echo "$best / $ideal" | bc -l)" "$(echo "$serial / $best" | bc -l)" "$land" "$queued" "$(gap "$tmp/best.jsonl")"
	if [ -n "${BASE:-}" ]; then
		printf '  %s: %6.2f s wall, efficiency %.2f; current / base wall %.3f; between two agents of a worker %s\n' "$BASE" "$(echo "$bbest / 1000000000" | bc -l)" \
			"$(echo "$ideal / $bbest" | bc -l)" "$(echo "$best / $bbest" | bc -l)" "$(gap "$tmp/bbest.jsonl")"
	fi
done
# procs BINARY: how many git processes one run at N=4 starts (git's own
# children included) - a count the machine's load does not move.
procs() {
	mkrepo "$tmp/repo-procs"
	PATH="$(dirname "$1"):$PATH" strace -f -qq -e trace=execve -o "$tmp/execs" "$1" run --plan plan.md --agent-cmd "sh $tmp/agent.sh" --workers 4 -q > /dev/null
	grep -c 'execve("[^"]*/git"' "$tmp/execs"
}
if command -v strace > /dev/null; then
	printf 'git processes in one run at N=4: %d' "$(procs "$tmp/wiggum")"
	[ -n "${BASE:-}" ] && printf ' (%s: %d)' "$BASE" "$(procs "$tmp/base-bin/wiggum")"
	echo
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
