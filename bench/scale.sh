#!/usr/bin/env bash
# The scale curve of checkpoint + rollback: `wiggum checkpoint` and
# `wiggum rollback` against the raw git floor of the same job, on the same
# generated repository in the same run, at growing sizes.
#
# usage: bench/scale.sh [SIZES...]         default: 1000 10000 (files)
#        BIG_MB=1024 bench/scale.sh 1000 10000 100000 big
#
# "big" is a 1,000-file repository with one large tracked file (BIG_MB,
# default 1024; random first MiB, the rest sparse) that is dirty at the
# checkpoint and changed again by the agent. 100000 takes minutes to set
# up: keep it out of CI. WIGGUM_BEFORE=/path/to/older/wiggum times an older
# build too, in the same rounds. Results: a table on stdout, the TSV in
# bench/scale.tsv and the plot in bench/scale.svg (ROUNDS overrides the
# rounds per size).
#
# The floors (what the same job costs in git alone):
#   checkpoint: git stash create (tracked changes, through the index)
#               + git ls-files -o --exclude-standard and hash-object -w of
#               the untracked files (what untracked files need)
#   rollback:   git reset --hard <checkpoint>
#               + git restore --source=<snapshot> --worktree of the paths
#               the checkpoint's own uncommitted state changed (the agent's
#               new files are removed outside the timing)
# wiggum does more in the same time budget: the agent lock, the checks that
# make the rollback safe, a backup of everything it discards, removal of
# new files, atomic state files.
set -euo pipefail
export CGO_ENABLED=0
here=$(cd "$(dirname "$0")/.." && pwd)
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000)
big_mb=${BIG_MB:-1024}
work=$(mktemp -d /tmp/wiggum-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT

(cd "$here" && go build -o "$work/wiggum" ./cmd/wiggum && go build -o "$work/scalecurve" ./bench/scalecurve)
wiggum="$work/wiggum"
before=${WIGGUM_BEFORE:-}

export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
git config --global user.name bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main
# No automatic gc or maintenance: a detached one started by the agent's
# commit would write into the repository being timed (and being removed).
git config --global gc.auto 0
git config --global maintenance.auto false

# setup SIZE: a committed repository in $work/r-SIZE; prints its path.
setup() {
	local size=$1 repo="$work/r-$1" n=$1
	[ "$size" = big ] && n=1000
	mkdir -p "$repo"
	"$work/scalecurve" gen "$repo" "$n"
	(
		cd "$repo"
		git init -q
		if [ "$size" = big ]; then
			head -c 1048576 /dev/urandom > big.bin
			truncate -s "${big_mb}M" big.bin
		fi
		git add -A
		git commit -q -m init
		"$wiggum" status > /dev/null # writes .git/info/exclude once, outside the timing
		git status > /dev/null       # as a user's git would: the index's stat data is fresh
	)
	echo "$repo"
}

# The state each round starts from: a modified tracked file, an untracked one
# (and, for big, the big file changed).
dirty() {
	git reset -q --hard "$base"
	git clean -qfd
	echo "pre-existing edit" >> pkg0000/f01.go
	echo "notes" > notes.txt
	[ -e big.bin ] && echo "dirty at checkpoint" >> big.bin
	return 0
}

# What an agent does between checkpoint and rollback.
iteration() {
	echo "// agent change $1" >> pkg0000/f02.go
	git add pkg0000/f02.go
	git commit -q -m "agent $1"
	mkdir -p pkg0000/new
	echo "new $1" > pkg0000/new/a.go
	echo "new $1" > pkg0000/b.go
	echo "// edit $1" >> pkg0000/f03.go
	[ -e big.bin ] && echo "agent $1" >> big.bin
	return 0
}

check_restored() {
	if [ "$(git rev-parse HEAD)" != "$base" ] || [ -e pkg0000/b.go ] || [ -e pkg0000/new ] ||
		! grep -q "pre-existing edit" pkg0000/f01.go || [ ! -e notes.txt ] || grep -q "edit" pkg0000/f03.go; then
		echo "bench: $1 did not restore the checkpoint state" >&2
		exit 1
	fi
	if [ -e big.bin ] && [ "$(tail -c 20 big.bin)" != "dirty at checkpoint" ]; then
		echo "bench: $1 did not restore big.bin" >&2
		exit 1
	fi
}

floor_checkpoint() {
	snap=$(git stash create)
	git ls-files -z -o --exclude-standard | tr '\0' '\n' | git hash-object -w --stdin-paths > /dev/null
}

# reset --hard leaves untracked files alone, so the checkpoint's untracked
# file is still there; the agent's new files are removed after the timing.
floor_rollback() {
	git reset -q --hard "$base"
	# shellcheck disable=SC2046
	git restore --source="$snap" --worktree -- $(git diff --name-only "$base" "$snap")
}

# timed NAME CMD...: runs CMD (a function may set variables) and adds its
# wall time and the CPU time (user + system, children included) in ms to
# wall_NAME and cpu_NAME. CPU time is what a busy machine does not inflate.
TIMEFORMAT='%3R %3U %3S'
timed() {
	local name=$1 r u s
	shift
	{ time "$@" > /dev/null 2> "$work/stderr"; } 2> "$work/time"
	read -r r u s < "$work/time"
	eval "wall_$name=\$(awk -v a=\"\${wall_$name:-0}\" -v b=$r 'BEGIN { print a + b * 1000 }')"
	eval "cpu_$name=\$(awk -v a=\"\${cpu_$name:-0}\" -v u=$u -v s=$s 'BEGIN { print a + (u + s) * 1000 }')"
}

# round_wiggum BIN NAME: one checkpoint + rollback round with BIN.
round_wiggum() {
	dirty
	timed "${2}_cp" "$1" checkpoint
	iteration "$2$r"
	timed "${2}_rb" "$1" rollback
	check_restored "$1 rollback"
}

rounds_for() {
	if [ -n "${ROUNDS:-}" ]; then echo "$ROUNDS"; return; fi
	case $1 in
	big) echo 2 ;;
	1000) echo 10 ;;
	10000) echo 5 ;;
	*) echo 3 ;;
	esac
}

tsv="$here/bench/scale.tsv"
printf 'case\top\twiggum_ms\tfloor_ms\tbefore_ms\twiggum_cpu_ms\tfloor_cpu_ms\tbefore_cpu_ms\n' > "$tsv"
echo "machine: $(nproc) cores, $(uname -sr); load before: $(uptime | sed 's/.*load average: //')"
echo "ms per operation (wall, then CPU of all processes); ratio = wiggum / raw git floor"
printf '%-7s %-10s %9s %9s %6s %9s %9s %6s' case op wiggum floor ratio 'wig cpu' 'floor cpu' ratio
[ -n "$before" ] && printf ' %9s %6s %9s %6s' before ratio 'bef cpu' ratio
echo
for size in "${sizes[@]}"; do
	repo=$(setup "$size")
	cd "$repo"
	base=$(git rev-parse HEAD)
	rounds=$(rounds_for "$size")
	unset wall_w_cp wall_w_rb wall_b_cp wall_b_rb wall_f_cp wall_f_rb cpu_w_cp cpu_w_rb cpu_b_cp cpu_b_rb cpu_f_cp cpu_f_rb
	for r in $(seq 1 "$rounds"); do
		round_wiggum "$wiggum" w
		[ -z "$before" ] || round_wiggum "$before" b
		dirty
		timed f_cp floor_checkpoint
		iteration "f$r"
		timed f_rb floor_rollback
		rm -rf pkg0000/new pkg0000/b.go
		check_restored "raw git floor"
	done
	label=$size
	[ "$size" = big ] && label="${big_mb}MB"
	for op in cp rb; do
		name=checkpoint
		[ $op = rb ] && name=rollback
		eval "w=\$wall_w_$op f=\$wall_f_$op b=\${wall_b_$op:-0} wc=\$cpu_w_$op fc=\$cpu_f_$op bc=\${cpu_b_$op:-0}"
		line=$(awk -v n="$rounds" -v w="$w" -v f="$f" -v b="$b" -v wc="$wc" -v fc="$fc" -v bc="$bc" -v before="$before" 'BEGIN {
			printf "%9.1f %9.1f %5.2fx %9.1f %9.1f %5.2fx", w/n, f/n, w/f, wc/n, fc/n, wc/fc
			if (before != "") printf " %9.1f %5.2fx %9.1f %5.2fx", b/n, b/f, bc/n, bc/fc
		}')
		printf '%-7s %-10s %s\n' "$label" "$name" "$line"
		awk -v n="$rounds" -v l="$label" -v o="$name" -v w="$w" -v f="$f" -v b="$b" -v wc="$wc" -v fc="$fc" -v bc="$bc" \
			'BEGIN { printf "%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", l, o, w/n, f/n, b/n, wc/n, fc/n, bc/n }' >> "$tsv"
	done
	cd "$work"
	rm -rf "$repo"
done
echo "load after: $(uptime | sed 's/.*load average: //')"
"$work/scalecurve" plot "$tsv" "$here/bench/scale.svg"
echo "wrote bench/scale.tsv and bench/scale.svg"
