#!/usr/bin/env bash
# Soak: an 8-worker `wiggum run` over a 40-story plan with scripted agents
# that commit, leave uncommitted files, fail, hang past --timeout and hit a
# Claude-style usage limit, SIGKILLed at random moments and at forced kill
# points (merge, plan tick, worktree removal, ...) and resumed, again and
# again, until KILLS kills have landed and the last plan is done. Each
# finished plan is checked: every story merged exactly once, every commit
# and file an agent made reachable from main or refs/wiggum/, no worktree,
# branch, lock or process left, git fsck clean. The driver is the Go test
# e2e/soak_test.go (CI runs it with 25 kills). SERIAL=1 soaks a serial
# run (no --workers) instead, at the kill points of a serial iteration:
# every story committed once with its tick, and none whose attempt had
# finished (agent exited 0, checks passed) started again (CI: 15 kills).
#
#   bench/soak.sh            # 1,000 kills (about an hour on 2 busy cores)
#   bench/soak.sh 50         # a short one
#   SERIAL=1 bench/soak.sh 200
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-1000}
test=TestSoakKillResume
if [ -n "${SERIAL:-}" ]; then test=TestSerialSoakKillResume; fi
report=${SOAK_REPORT:-$(mktemp -t wiggum-soak-XXXXXX.json)}
WIGGUM_SOAK_KILLS=$kills WIGGUM_SOAK_REPORT=$report \
	go test -count=1 -timeout 0 -run "^$test\$" -v ./e2e
echo "report: $report"
cat "$report"
