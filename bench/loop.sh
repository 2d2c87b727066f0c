#!/bin/sh
# bench/loop.sh: per-iteration overhead of `wiggum run` with an agent that
# commits - it appends one line to a tracked file and exits 0, so every
# iteration makes a commit - against the raw git floor of such an
# iteration, run from a shell loop in the same run on the same kind of
# repository: `rev-parse HEAD`, the agent (the same command), `status
# --porcelain`, tick the plan line, `add -A`, `commit` (without git's
# automatic maintenance check, which wiggum's commits skip too). Then the same for
# plans of 100, 1,000 and 10,000 stories, each with a detail block per
# story, over the first ITER iterations, to show whether an iteration's
# cost grows with the plan.
#
#   bench/loop.sh                 # N=100 stories, ROUNDS=3, curve at 100/1000/10000
#   CURVE= bench/loop.sh          # the 100-story comparison only
#
# Prints ms/iteration for both and the ratio; with ROUNDS > 1 the best
# round of each.
set -eu
export CGO_ENABLED=0
N=${N:-100}
ROUNDS=${ROUNDS:-3}
ITER=${ITER:-40}
CURVE=${CURVE-100 1000 10000}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/wiggum" ./cmd/wiggum)

export GIT_CONFIG_NOSYSTEM=1 HOME="$tmp" GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
	GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

AGENT='cat > /dev/null; echo "$WIGGUM_STORY" >> work.txt'
now() { date +%s%N; }

# mkrepo DIR STORIES DETAILS: a repository whose plan has STORIES stories,
# with a detail block each when DETAILS is 1.
mkrepo() {
	rm -rf "$1" && mkdir -p "$1" && cd "$1"
	git init -q
	awk -v n="$2" -v d="$3" 'BEGIN {
		print "# Plan\n"
		for (i = 1; i <= n; i++) printf "- [ ] US-%d: story %d\n", i, i
		if (d == 1) for (i = 1; i <= n; i++) printf "\n### US-%d: story %d\nAs a user I want story %d so that the benchmark has details to read.\n- [ ] it works\n- [ ] it is tested\n", i, i, i
	}' > plan.md
	echo start > work.txt
	git add plan.md work.txt && git commit -q -m init
}

# raw_loop COUNT: the floor, COUNT iterations.
raw_loop() {
	i=1
	while [ $i -le "$1" ]; do
		git rev-parse HEAD > /dev/null
		WIGGUM_STORY=US-$i sh -c "$AGENT" < /dev/null
		git status --porcelain > /dev/null
		sed -i "s/^- \[ \] US-$i:/- [x] US-$i:/" plan.md
		git add -A
		git -c gc.auto=0 -c maintenance.auto=false commit -q -m "US-$i: story $i"
		i=$((i + 1))
	done
}

ms() { echo "$1 / 1000000" | bc -l; }

best_w=0 best_r=0
r=1
while [ "$r" -le "$ROUNDS" ]; do
	mkrepo "$tmp/raw" "$N" 0
	t0=$(now); raw_loop "$N"; t1=$(now)
	raw=$(( (t1 - t0) / N ))
	mkrepo "$tmp/wiggum-repo" "$N" 0
	t0=$(now)
	"$tmp/wiggum" run --plan plan.md --agent-cmd "$AGENT" -q > /dev/null
	t1=$(now)
	w=$(( (t1 - t0) / N ))
	[ "$(grep -c '^- \[x\]' plan.md)" -eq "$N" ] || { echo "wiggum did not finish every story" >&2; exit 1; }
	[ "$(git rev-list --count HEAD)" -eq $((N + 1)) ] || { echo "wiggum did not make one commit per story" >&2; exit 1; }
	printf 'round %d, %d stories, committing agent: wiggum %6.2f ms/iteration, raw git floor %6.2f ms, ratio %.3fx\n' \
		"$r" "$N" "$(ms $w)" "$(ms $raw)" "$(echo "$w / $raw" | bc -l)"
	if [ $best_w -eq 0 ] || [ "$w" -lt $best_w ]; then best_w=$w; fi
	if [ $best_r -eq 0 ] || [ "$raw" -lt $best_r ]; then best_r=$raw; fi
	r=$((r + 1))
done
printf 'best of %d: wiggum %.2f ms/iteration, raw git floor %.2f ms, ratio %.3fx\n' \
	"$ROUNDS" "$(ms $best_w)" "$(ms $best_r)" "$(echo "$best_w / $best_r" | bc -l)"

# The curve: ITER iterations on plans of each size, with detail blocks.
first=0
for n in $CURVE; do
	bw=0 br=0
	r=1
	while [ "$r" -le "$ROUNDS" ]; do
		mkrepo "$tmp/raw" "$n" 1
		t0=$(now); raw_loop "$ITER"; t1=$(now)
		raw=$(( (t1 - t0) / ITER ))
		mkrepo "$tmp/wiggum-repo" "$n" 1
		t0=$(now)
		"$tmp/wiggum" run --plan plan.md --agent-cmd "$AGENT" --max-iterations "$ITER" -q > /dev/null 2>&1 || [ $? -eq 5 ]
		t1=$(now)
		w=$(( (t1 - t0) / ITER ))
		[ "$(grep -c '^- \[x\] US' plan.md)" -eq "$ITER" ] || { echo "wiggum did not finish $ITER stories of $n" >&2; exit 1; }
		if [ $bw -eq 0 ] || [ "$w" -lt $bw ]; then bw=$w; fi
		if [ $br -eq 0 ] || [ "$raw" -lt $br ]; then br=$raw; fi
		r=$((r + 1))
	done
	[ $first -eq 0 ] && first=$bw
	printf 'curve: %5d stories (with details), %d iterations: wiggum %6.2f ms/iteration, raw git floor %6.2f ms, ratio %.3fx; wiggum vs 100-story plan %.2fx\n' \
		"$n" "$ITER" "$(ms $bw)" "$(ms $br)" "$(echo "$bw / $br" | bc -l)" "$(echo "$bw / $first" | bc -l)"
done
