#!/usr/bin/env bash
# Measures what `wiggum checkpoint` + `wiggum rollback` cost against git's
# own floor for the same job, in one run on the same temporary repository,
# and prints the ratio. bench/scale.sh draws the same comparison at 1k to
# 100k files and with a large file.
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

# The raw git floor of the same job (not a copy of wiggum's method):
# recording is `git stash create` (tracked changes through the index) plus
# hashing the untracked files; returning is `git reset --hard` plus
# `git restore --worktree` of the checkpoint's own uncommitted paths
# (untracked files survive the reset; the agent's new files are removed
# after the timing). wiggum additionally takes the agent lock, checks that
# the rollback is safe, backs up everything it discards and removes the
# new files.
raw_checkpoint() {
	cp_snap=$(git stash create)
	git ls-files -z -o --exclude-standard | tr '\0' '\n' | git hash-object -w --stdin-paths > /dev/null
}

raw_rollback() {
	git reset -q --hard "$base"
	# shellcheck disable=SC2046
	git restore --source="$cp_snap" --worktree -- $(git diff --name-only "$base" "$cp_snap")
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
	t2=$(now); raw_rollback; t3=$(now)
	rm -rf src/new src/b.txt
	check_restored "$base" "raw git rollback"
	raw_ns=$((raw_ns + t1 - t0 + t3 - t2))
done

wig_ms=$(awk -v n="$wig_ns" -v r="$rounds" 'BEGIN { printf "%.1f", n / r / 1e6 }')
raw_ms=$(awk -v n="$raw_ns" -v r="$rounds" 'BEGIN { printf "%.1f", n / r / 1e6 }')
ratio=$(awk -v a="$wig_ns" -v b="$raw_ns" 'BEGIN { printf "%.2f", a / b }')
echo "rounds:                       $rounds (200 tracked files; dirty tree; 1 commit + 2 new files + 1 edit per iteration)"
echo "wiggum checkpoint + rollback: $wig_ms ms per round"
echo "raw git floor:                $raw_ms ms per round"
echo "ratio wiggum / raw git:       ${ratio}x"
