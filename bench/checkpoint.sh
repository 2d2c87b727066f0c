#!/usr/bin/env bash
# Measures what `wiggum checkpoint` + `wiggum rollback` cost against the raw
# git commands a careful shell loop would need for the same job, in one run
# on the same temporary repository, and prints the ratio.
#
# usage: bench/checkpoint.sh [ROUNDS]   (default 30)
#
# Each round: the tree is dirty (a modified and an untracked file), the
# rollback point is recorded, an "agent iteration" commits a change and adds
# new files and edits, then everything returns to the rollback point. Only
# the record and the return are timed; the iteration is the same for both.
set -euo pipefail
# Build as install.sh does: static, no cgo (os/user via terminfo would
# otherwise link libc dynamically and add the loader to every start).
export CGO_ENABLED=0

rounds=${1:-30}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$here" && go build -o "$work/wiggum" ./cmd/wiggum)
wiggum="$work/wiggum"

# A private git configuration, set after the build (which needs the real HOME).
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1 LC_ALL=C
mkdir -p "$HOME"
git config --global user.name bench
git config --global user.email bench@example.com
git config --global init.defaultBranch main

repo="$work/repo"
mkdir -p "$repo/src"
cd "$repo"
git init -q
for i in $(seq 1 200); do printf 'line %s\n' $(seq 1 50) > "src/file$i.txt"; done
git add -A
git commit -q -m init
"$wiggum" status >/dev/null # writes .git/info/exclude once, outside the timing

now() { date +%s%N; }

# The state each round starts from: one tracked file modified, one untracked.
dirty() {
	echo "pre-existing edit" >> src/file1.txt
	echo "notes" > notes.txt
}

# What an agent does between checkpoint and rollback.
iteration() {
	echo "agent change $1" >> src/file2.txt
	git add src/file2.txt
	git commit -q -m "agent $1"
	mkdir -p src/new
	echo "new $1" > src/new/a.txt
	echo "new $1" > src/b.txt
	echo "edit $1" >> src/file3.txt
}

# raw_snapshot PARENT: a commit of the whole working tree (tracked and
# untracked, not ignored) built with a temporary index, as stash does.
raw_snapshot() {
	local idx="$PWD/.git/bench-index" tree
	rm -f "$idx"
	GIT_INDEX_FILE=$idx git read-tree "$1"
	GIT_INDEX_FILE=$idx git add -A -- .
	tree=$(GIT_INDEX_FILE=$idx git write-tree)
	rm -f "$idx"
	git commit-tree "$tree" -p "$1" -m snapshot
}

raw_checkpoint() {
	cp_head=$(git rev-parse HEAD)
	cp_branch=$(git symbolic-ref -q HEAD)
	cp_snap=""
	if [ -n "$(git status --porcelain --untracked-files=all)" ]; then
		cp_snap=$(raw_snapshot "$cp_head")
		git update-ref refs/bench/checkpoint "$cp_snap"
	fi
	git ls-files -z --others --exclude-standard > .git/bench-untracked
	printf '%s %s %s\n' "$cp_head" "$cp_branch" "$cp_snap" > .git/bench-checkpoint
}

raw_rollback() {
	local head backup
	head=$(git rev-parse HEAD)
	git merge-base --is-ancestor "$cp_head" "$head"
	git rev-list "$cp_head..$head" > /dev/null
	backup=$(raw_snapshot "$head")
	git update-ref "refs/bench/backup/$1" "$backup" ""
	git update-ref "$cp_branch" "$cp_head" "$head"
	git reset -q --hard
	if [ -n "$cp_snap" ]; then
		local idx="$PWD/.git/bench-index"
		GIT_INDEX_FILE=$idx git read-tree "$cp_snap^{tree}"
		GIT_INDEX_FILE=$idx git checkout-index -a -f
		rm -f "$idx"
	fi
	# clean: remove the untracked files that did not exist at checkpoint time
	git ls-files -z --others --exclude-standard |
		grep -zvxF -f <(tr '\0' '\n' < .git/bench-untracked) |
		xargs -0 -r rm -f --
	find src -type d -empty -delete
}

check_restored() {
	if [ "$(git rev-parse HEAD)" != "$1" ] || [ -e src/b.txt ] || [ -e src/new ] ||
		! grep -q "pre-existing edit" src/file1.txt || [ ! -e notes.txt ] || grep -q "edit" src/file3.txt; then
		echo "bench: $2 did not restore the checkpoint state" >&2
		exit 1
	fi
}

wig_ns=0
raw_ns=0
base=$(git rev-parse HEAD)
for r in $(seq 1 "$rounds"); do
	# wiggum
	git reset -q --hard "$base"; git clean -qfd; dirty
	t0=$(now); "$wiggum" checkpoint >/dev/null; t1=$(now)
	iteration "w$r"
	t2=$(now); "$wiggum" rollback >/dev/null; t3=$(now)
	check_restored "$base" "wiggum rollback"
	wig_ns=$((wig_ns + t1 - t0 + t3 - t2))

	# raw git
	git reset -q --hard "$base"; git clean -qfd; dirty
	t0=$(now); raw_checkpoint; t1=$(now)
	iteration "r$r"
	t2=$(now); raw_rollback "$r"; t3=$(now)
	check_restored "$base" "raw git rollback"
	raw_ns=$((raw_ns + t1 - t0 + t3 - t2))
done

wig_ms=$(awk -v n="$wig_ns" -v r="$rounds" 'BEGIN { printf "%.1f", n / r / 1e6 }')
raw_ms=$(awk -v n="$raw_ns" -v r="$rounds" 'BEGIN { printf "%.1f", n / r / 1e6 }')
ratio=$(awk -v a="$wig_ns" -v b="$raw_ns" 'BEGIN { printf "%.2f", a / b }')
echo "rounds:                       $rounds (200 tracked files; dirty tree; 1 commit + 2 new files + 1 edit per iteration)"
echo "wiggum checkpoint + rollback: $wig_ms ms per round"
echo "raw git equivalent:           $raw_ms ms per round"
echo "ratio wiggum / raw git:       ${ratio}x"
