#!/bin/sh
# bench/loop.sh: per-iteration cost of `wiggum run` with an agent that
# commits - it reads its prompt, appends one line to a tracked file and
# exits 0, so every iteration makes a commit - against the raw git floor of
# such an iteration, run from a shell loop in the same run on the same kind
# of repository: `rev-parse HEAD`, the agent (the same command), `status
# --porcelain`, tick the plan line (sed -i), `add -A`, `commit` (without
# git's automatic maintenance check, which wiggum's commits skip too).
#
# 1. A 100-story plan run to the end, floor and wiggum interleaved, ROUNDS
#    rounds.
# 2. The plan-size curve: plans of 100, 1,000, 2,000 and 10,000 stories,
#    each with a detail block per story, ITER iterations each. Every round
#    runs every size, floor then wiggum, so a change in the machine's load
#    falls on all of them alike. The per-iteration overhead is wiggum minus
#    the floor at the same size in the same round (the median over rounds);
#    it is what must stay flat while the floor itself grows with the plan
#    (sed rewrites it, git hashes it). A one-iteration run in the same
#    round tells wiggum's once-per-run start-up (lock, journal, recovery
#    checks, the plan's first parse) from the cost of each iteration; the
#    overhead is printed with and without it. Wall and CPU time (user +
#    system of every process, which other load does not inflate) are both
#    reported.
#    The curve goes to bench/loop-curve.tsv and is plotted to
#    bench/loop-curve.svg.
#
# With BEFORE=<git revision>, wiggum built from that revision is timed in
# the 100-story comparison too, interleaved with the floor and this build
# in every round (before/after from one run, under one load).
#
# Every timed run gets a new repository; they are all removed at the end,
# not between runs: removing one frees thousands of inodes, and ext4
# without a journal (this VM's root) has every file created in the next
# minute search past the inodes freed recently, so a removal just before a
# run would slow that run's every file creation.
#
#   bench/loop.sh                  # both, ROUNDS=3, ITER=40
#   CURVE= bench/loop.sh           # the 100-story comparison only
#   CURVE= BEFORE=2afbf90 bench/loop.sh  # ... with that revision interleaved
#   N=0 bench/loop.sh              # the curve only
#   OUT= bench/loop.sh             # write no TSV or plot
set -eu
export CGO_ENABLED=0
N=${N:-100}
ROUNDS=${ROUNDS:-3}
ITER=${ITER:-40}
CURVE=${CURVE-100 1000 2000 10000}
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT-$here/bench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/wiggum" ./cmd/wiggum)
BEFORE=${BEFORE:-}
if [ -n "$BEFORE" ]; then
	mkdir "$tmp/before-src"
	git -C "$here" archive "$BEFORE" | tar -x -C "$tmp/before-src"
	(cd "$tmp/before-src" && go build -o "$tmp/before-bin/wiggum" ./cmd/wiggum)
fi
if [ -n "$OUT" ] && [ -n "$CURVE" ]; then
	(cd "$here" && go build -o "$tmp/scalecurve" ./bench/scalecurve)
fi
# The build timed is the wiggum on PATH, as for a user who installed it
# (otherwise each run links itself into PATH and says so).
export PATH="$tmp:$PATH"

export GIT_CONFIG_NOSYSTEM=1 HOME="$tmp" GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
	GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

AGENT='cat > /dev/null; echo "$WIGGUM_STORY" >> work.txt'
now() { date +%s%N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime; }

# cpu VAR: sets VAR to the CPU time (ms, user + system) of every child
# this shell has waited for so far, from the shell's own `times` - run here
# and parsed with the shell's own expansions: in a subshell, or with awk,
# the children would not be ours, or would count.
cpu() {
	times > "$tmp/times"
	{ read -r _ _ && read -r cu cs; } < "$tmp/times"
	total=0
	for t in $cu $cs; do
		m=${t%%m*} sec=${t#*m}
		sec=${sec%s}
		whole=${sec%.*} frac=${sec#*.}000
		frac=${frac%"${frac#???}"}
		total=$((total + (m * 60 + whole) * 1000 + 1$frac - 1000))
	done
	eval "$1=$total"
}

# mkrepo NAME STORIES DETAILS: a new repository (NAME.1, NAME.2, ... under
# $tmp) whose plan has STORIES stories, with a detail block each when
# DETAILS is 1; the shell is left in it.
repos=0
mkrepo() {
	repos=$((repos + 1))
	mkdir -p "$1.$repos" && cd "$1.$repos"
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

# timed NAME COUNT CMD...: runs CMD, then sets NAME_wall and NAME_cpu to its
# wall and CPU time per iteration (µs).
timed() {
	name=$1 count=$2
	shift 2
	cpu c0
	t0=$(now)
	"$@"
	t1=$(now)
	cpu c1
	eval "${name}_wall=$(( (t1 - t0) / 1000 / count ))"
	eval "${name}_cpu=$(( (c1 - c0) * 1000 / count ))"
}

wiggum_all() { "$tmp/wiggum" run --plan plan.md --agent-cmd "$AGENT" -q > /dev/null; }
# The before build runs with its own directory first on PATH, as this one
# does with $tmp (otherwise it links itself into PATH and says so).
before_all() { PATH="$tmp/before-bin:$PATH" "$tmp/before-bin/wiggum" run --plan plan.md --agent-cmd "$AGENT" -q > /dev/null; }
wiggum_some() { "$tmp/wiggum" run --plan plan.md --agent-cmd "$AGENT" --max-iterations "$1" -q > /dev/null 2>&1 || [ $? -eq 5 ]; }

# median FILE: the median of the numbers in FILE, one a line.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ms() { awk -v v="$1" 'BEGIN { printf "%.2f", v / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0 || a < 0) print "n/a"; else printf "%.3f", a / b }'; }

echo "machine: $(nproc) cores, $(uname -sr), $(git --version); load average before: $(loadavg)"

# check_run: the repository wiggum just ran in has every story ticked, in
# one commit each.
check_run() {
	[ "$(grep -c '^- \[x\]' plan.md)" -eq "$N" ] || { echo "$1 did not finish every story" >&2; exit 1; }
	[ "$(git rev-list --count HEAD)" -eq $((N + 1)) ] || { echo "$1 did not make one commit per story" >&2; exit 1; }
}

if [ "$N" -gt 0 ]; then
	: > "$tmp/w" && : > "$tmp/f" && : > "$tmp/wc" && : > "$tmp/fc" && : > "$tmp/b" && : > "$tmp/bc"
	r=1
	while [ "$r" -le "$ROUNDS" ]; do
		mkrepo "$tmp/raw" "$N" 0
		timed raw "$N" raw_loop "$N"
		note=
		if [ -n "$BEFORE" ]; then
			mkrepo "$tmp/before-repo" "$N" 0
			timed bef "$N" before_all
			check_run "wiggum $BEFORE"
			echo "$bef_wall" >> "$tmp/b" && echo "$bef_cpu" >> "$tmp/bc"
			note=$(printf '; before (%s) %s ms, %sx (CPU %s ms, %sx)' "$BEFORE" "$(ms "$bef_wall")" "$(ratio "$bef_wall" "$raw_wall")" \
				"$(ms "$bef_cpu")" "$(ratio "$bef_cpu" "$raw_cpu")")
		fi
		mkrepo "$tmp/wiggum-repo" "$N" 0
		timed wig "$N" wiggum_all
		check_run wiggum
		echo "$wig_wall" >> "$tmp/w" && echo "$raw_wall" >> "$tmp/f" && echo "$wig_cpu" >> "$tmp/wc" && echo "$raw_cpu" >> "$tmp/fc"
		printf 'round %d, %d stories, committing agent: wiggum %6s ms/iteration, raw git floor %6s ms, ratio %sx (CPU %s vs %s ms, %sx)%s\n' \
			"$r" "$N" "$(ms "$wig_wall")" "$(ms "$raw_wall")" "$(ratio "$wig_wall" "$raw_wall")" \
			"$(ms "$wig_cpu")" "$(ms "$raw_cpu")" "$(ratio "$wig_cpu" "$raw_cpu")" "$note"
		r=$((r + 1))
	done
	bw=$(sort -n "$tmp/w" | head -1) bf=$(sort -n "$tmp/f" | head -1)
	mw=$(median "$tmp/w") mf=$(median "$tmp/f") mwc=$(median "$tmp/wc") mfc=$(median "$tmp/fc")
	printf 'best of %d: wiggum %s ms/iteration, raw git floor %s ms, ratio %sx\n' "$ROUNDS" "$(ms "$bw")" "$(ms "$bf")" "$(ratio "$bw" "$bf")"
	printf 'median of %d: wiggum %s ms/iteration, raw git floor %s ms, ratio %sx; CPU %s vs %s ms, %sx\n' "$ROUNDS" \
		"$(ms "$mw")" "$(ms "$mf")" "$(ratio "$mw" "$mf")" "$(ms "$mwc")" "$(ms "$mfc")" "$(ratio "$mwc" "$mfc")"
	if [ -n "$BEFORE" ]; then
		mb=$(median "$tmp/b") mbc=$(median "$tmp/bc")
		printf 'median of %d: before (%s) %s ms/iteration, ratio %sx; CPU %s ms, %sx; this build / before: %sx wall, %sx CPU\n' "$ROUNDS" "$BEFORE" \
			"$(ms "$mb")" "$(ratio "$mb" "$mf")" "$(ms "$mbc")" "$(ratio "$mbc" "$mfc")" "$(ratio "$mw" "$mb")" "$(ratio "$mwc" "$mbc")"
	fi
fi

# The curve.
if [ -n "$CURVE" ]; then
	for n in $CURVE; do : > "$tmp/c.$n"; done
	r=1
	while [ "$r" -le "$ROUNDS" ]; do
		for n in $CURVE; do
			mkrepo "$tmp/raw" "$n" 1
			timed raw "$ITER" raw_loop "$ITER"
			mkrepo "$tmp/wiggum-repo" "$n" 1
			timed wig "$ITER" wiggum_some "$ITER"
			[ "$(grep -c '^- \[x\] US' plan.md)" -eq "$ITER" ] || { echo "wiggum did not finish $ITER stories of $n" >&2; exit 1; }
			# A one-iteration run: wiggum's start-up (lock, journal,
			# recovery checks, the plan's first parse) plus one iteration,
			# to tell the per-iteration cost from the once-per-run one.
			mkrepo "$tmp/wiggum-repo" "$n" 1
			timed one 1 wiggum_some 1
			echo "$raw_wall $wig_wall $raw_cpu $wig_cpu $one_wall $one_cpu" >> "$tmp/c.$n"
		done
		r=$((r + 1))
	done
	[ -z "$OUT" ] || printf 'stories\tfloor_ms\twiggum_ms\toverhead_ms\tfloor_cpu_ms\twiggum_cpu_ms\toverhead_cpu_ms\tstartup_ms\tsteady_overhead_ms\tsteady_overhead_cpu_ms\n' > "$OUT/loop-curve.tsv"
	for n in $CURVE; do
		for col in 1 2 3 4; do awk -v c=$col '{ print $c }' "$tmp/c.$n" > "$tmp/col$col"; done
		awk '{ print $2 - $1 }' "$tmp/c.$n" > "$tmp/ow"
		awk '{ print $4 - $3 }' "$tmp/c.$n" > "$tmp/oc"
		# Without start-up: (ITER iterations - one) / (ITER - 1), less
		# the floor; start-up: the one-iteration run less an iteration.
		awk -v k="$ITER" '{ s = ($2 * k - $5) / (k - 1); print int(s - $1) }' "$tmp/c.$n" > "$tmp/sw"
		awk -v k="$ITER" '{ s = ($4 * k - $6) / (k - 1); print int(s - $3) }' "$tmp/c.$n" > "$tmp/sc"
		awk -v k="$ITER" '{ s = ($2 * k - $5) / (k - 1); print int($5 - s) }' "$tmp/c.$n" > "$tmp/su"
		f=$(median "$tmp/col1") w=$(median "$tmp/col2") fc=$(median "$tmp/col3") wc=$(median "$tmp/col4")
		ow=$(median "$tmp/ow") oc=$(median "$tmp/oc") sw=$(median "$tmp/sw") sc=$(median "$tmp/sc") su=$(median "$tmp/su")
		eval "f_$n=$f w_$n=$w ow_$n=$ow oc_$n=$oc fc_$n=$fc wc_$n=$wc sw_$n=$sw sc_$n=$sc"
		printf 'curve: %5d stories (with details), %d iterations: floor %6s ms, wiggum %6s ms (%sx), overhead %6s ms; CPU floor %6s ms, wiggum %6s ms, overhead %6s ms\n' \
			"$n" "$ITER" "$(ms "$f")" "$(ms "$w")" "$(ratio "$w" "$f")" "$(ms "$ow")" "$(ms "$fc")" "$(ms "$wc")" "$(ms "$oc")"
		printf 'curve: %5d stories: wiggum start-up %s ms once per run; overhead per iteration without it %s ms (CPU %s ms)\n' \
			"$n" "$(ms "$su")" "$(ms "$sw")" "$(ms "$sc")"
		[ -z "$OUT" ] || printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$(ms "$f")" "$(ms "$w")" "$(ms "$ow")" "$(ms "$fc")" "$(ms "$wc")" "$(ms "$oc")" \
			"$(ms "$su")" "$(ms "$sw")" "$(ms "$sc")" >> "$OUT/loop-curve.tsv"
	done
	first=${CURVE%% *}
	for n in $CURVE; do
		[ "$n" != "$first" ] || continue
		eval "f=\$f_$n w=\$w_$n ow=\$ow_$n oc=\$oc_$n f0=\$f_$first w0=\$w_$first ow0=\$ow_$first oc0=\$oc_$first"
		eval "sw=\$sw_$n sc=\$sc_$n sw0=\$sw_$first sc0=\$sc_$first"
		printf 'curve: %d vs %d stories: overhead %s vs %s ms (%sx; CPU %sx), without start-up %s vs %s ms (%sx; CPU %sx), wiggum total %sx, floor total %sx\n' \
			"$n" "$first" "$(ms "$ow")" "$(ms "$ow0")" "$(ratio "$ow" "$ow0")" "$(ratio "$oc" "$oc0")" \
			"$(ms "$sw")" "$(ms "$sw0")" "$(ratio "$sw" "$sw0")" "$(ratio "$sc" "$sc0")" "$(ratio "$w" "$w0")" "$(ratio "$f" "$f0")"
	done
	if [ -n "$OUT" ]; then
		"$tmp/scalecurve" loop "$OUT/loop-curve.tsv" "$OUT/loop-curve.svg"
		echo "curve written to $OUT/loop-curve.tsv and $OUT/loop-curve.svg"
	fi
fi
echo "load average after: $(loadavg)"
