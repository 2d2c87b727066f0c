#!/usr/bin/env bash
# A bash loop in the style of the ralph loop wiggum replaces, written for
# bench/loop.sh as a same-run baseline: per iteration it picks the next open
# story, saves HEAD to .ralph/.checkpoint, feeds a prompt to the agent,
# commits what changed, ticks the story and commits that, and appends to a
# progress file - under `flock -n .ralph/.agent-lock` for the whole run.
# Usage: ralph-baseline.sh AGENT_CMD (run in the repository, plan in plan.md)
set -u
agent=$1
mkdir -p .ralph
grep -qx '/.ralph/' .git/info/exclude 2>/dev/null || echo '/.ralph/' >> .git/info/exclude
exec 9> .ralph/.agent-lock
flock -n 9 || { echo "Another agent is running" >&2; exit 1; }
while story=$(grep -m1 -o '^- \[ \] [A-Z]*-[0-9]*' plan.md | sed 's/^- \[ \] //'); [ -n "$story" ]; do
	git rev-parse HEAD > .ralph/.checkpoint
	prompt="Implement $story from plan.md. Commit when done.
$(sed -n "/^- \[ \] $story:/p" plan.md)"
	if ! printf '%s\n' "$prompt" | bash -c "$agent"; then
		git reset -q --hard "$(cat .ralph/.checkpoint)"
		continue
	fi
	if [ -n "$(git status --porcelain)" ]; then
		git add -A && git commit -q -m "$story: implement"
	fi
	sed -i "s/^- \[ \] $story:/- [x] $story:/" plan.md
	git add plan.md && git commit -q -m "$story: mark done"
	echo "$(date -u +%FT%TZ) $story done" >> .ralph/progress.txt
done
