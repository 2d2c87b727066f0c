#!/bin/sh
# bench/remote.sh: `wiggum run --remote` with M "machines" (M clones, one
# wiggum process each) sharing S stories through git daemon on 127.0.0.1,
# for M = 1, 2, 4, 8; the agent sleeps T seconds. Prints wall time against
# the ideal ceil(S/M)·T computed for the same S and T (efficiency = ideal /
# wall; DESIGN.md: at least 0.8 at 4 machines), the pushes and fetches per
# story (remote_stats events), and the milliseconds of claim + landing per
# story (claim_ms of the claimed events, land_ms of the landed ones; the
# landing's figure includes its fetch, merge-tree, tick, commit and the
# atomic push, and any retry after another machine landed first). Also the
# speedup over the 1-machine run of the same session divided by M: that
# scaling efficiency does not charge the protocol for what one machine
# already spends per story (a loaded box makes every process slower), and
# the load average before and after, because it does. First the floor:
# a round trip to the same daemon with git's own connection (ls-remote,
# push), against which the claim + landing per story is also given.
# TIMELINE=M also prints each machine's timeline of the M-machine run.
# A run that fails (a machine's exit, a story not landed or landed twice)
# keeps the server's repository and every machine's records in
# /tmp/wiggum-remote-failed.* and says so.
set -eu
export CGO_ENABLED=0
S=${S:-32}
T=${T:-1}
MACHINES=${MACHINES:-1 2 4 8}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
daemon=
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
# WIGGUM_BIN=path times that build instead (an older one, for before/after).
if [ -n "${WIGGUM_BIN:-}" ]; then
	cp "$WIGGUM_BIN" "$tmp/wiggum"
else
	(cd "$here" && go build -o "$tmp/wiggum" ./cmd/wiggum)
fi
# The build timed is the wiggum on PATH, as for a user who installed it
# (otherwise each run links itself into PATH and says so).
export PATH="$tmp:$PATH"

export GIT_CONFIG_NOSYSTEM=1 HOME="$tmp" GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com \
	GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
git config --global init.defaultBranch main

now() { date +%s%N; }

cat > "$tmp/agent.sh" <<AGENT
cat > /dev/null
sleep $T
echo "\$WIGGUM_STORY" > "f-\$WIGGUM_STORY.txt"
AGENT

mkdir -p "$tmp/srv"
port=$((20000 + $$ % 20000))
tries=0
while :; do
	git daemon --reuseaddr --enable=receive-pack --export-all --base-path="$tmp/srv" \
		--listen=127.0.0.1 --port=$port "$tmp/srv" 2>/dev/null &
	daemon=$!
	sleep 0.3
	if kill -0 "$daemon" 2>/dev/null; then break; fi
	tries=$((tries + 1))
	[ $tries -lt 20 ] || { echo "could not start git daemon" >&2; exit 1; }
	port=$((port + 1))
done
url="git://127.0.0.1:$port"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# The floor: one round trip to the same daemon with git's own connection
# (protocol v2 ls-remote as git does it by default, v0 ls-remote, and a
# push that creates a ref with a new commit, then one that deletes it),
# 10 of each, in ms.
git init -q --bare "$tmp/srv/floor.git"
rm -rf "$tmp/fl" && git init -q "$tmp/fl" && cd "$tmp/fl" && git commit -q --allow-empty -m floor && git push -q "$url/floor.git" HEAD:refs/heads/main
rt() {
	s=$(now)
	for i in 1 2 3 4 5 6 7 8 9 10; do "$@" > /dev/null 2>&1; done
	echo "$(($(now) - s))" | awk '{printf "%.1f", $1 / 10 / 1000000}'
}
lsv2=$(rt git ls-remote "$url/floor.git" main)
lsv0=$(rt git -c protocol.version=0 ls-remote "$url/floor.git" main)
pushes() {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		c=$(git commit-tree -m "claim $i" "$(git rev-parse 'HEAD^{tree}')")
		git push -q "$url/floor.git" "$c:refs/wiggum/claims/f$i" && git push -q "$url/floor.git" ":refs/wiggum/claims/f$i"
	done > /dev/null 2>&1
}
s=$(now); pushes; pushrt=$(echo "$(($(now) - s))" | awk '{printf "%.1f", $1 / 20 / 1000000}')
echo "floor: ls-remote ${lsv2} ms (protocol v2), ${lsv0} ms (v0); push ${pushrt} ms (git's own connection to git daemon on 127.0.0.1)"
single=0
# evidence WHAT: keeps the server's repository and each machine's records
# (its log, .ralph: journal, events, worktrees; its refs and commits) of
# the failed M-machine run for a post-mortem, says where, and exits 1.
evidence() {
	kept=$(mktemp -d /tmp/wiggum-remote-failed.XXXXXX)
	cp -r "$tmp/srv/$name.git" "$kept/server.git"
	for d in "$tmp/$name"-m*; do
		[ -d "$d" ] || continue
		b=$(basename "$d")
		mkdir -p "$kept/$b"
		cp "$d.log" "$kept/$b.log" 2>/dev/null
		cp -r "$d/.ralph" "$kept/$b/" 2>/dev/null
		git -C "$d" log --all --format='%H %P %s%n%b' > "$kept/$b/commits.txt" 2>/dev/null
		git -C "$d" for-each-ref > "$kept/$b/refs.txt" 2>/dev/null
	done
	echo "$1; the server's repository and each machine's records are kept in $kept" >&2
	exit 1
}
sum() { awk '{s += $1; c++} END {printf "%.1f", (c ? s : 0)}'; }

for m in $MACHINES; do
	name=r$m
	git init -q --bare "$tmp/srv/$name.git"
	rm -rf "$tmp/seed" && mkdir "$tmp/seed" && cd "$tmp/seed" && git init -q
	i=1
	while [ $i -le "$S" ]; do echo "- [ ] US-$i: story $i"; i=$((i + 1)); done > plan.md
	git add plan.md && git commit -q -m init && git push -q "$url/$name.git" main
	k=1
	while [ $k -le "$m" ]; do git clone -q "$url/$name.git" "$tmp/$name-m$k"; k=$((k + 1)); done
	t0=$(now)
	k=1
	pids=
	while [ $k -le "$m" ]; do
		(cd "$tmp/$name-m$k" && "$tmp/wiggum" run --plan plan.md --agent-cmd "sh $tmp/agent.sh" --remote origin -q > ../$name-m$k.log 2>&1) &
		pids="$pids $!"
		k=$((k + 1))
	done
	fail=0
	for p in $pids; do wait "$p" || fail=1; done
	t1=$(now)
	[ $fail -eq 0 ] || { echo "a machine failed:" >&2; cat "$tmp/$name"-m*.log >&2; evidence "a machine failed"; }
	cd "$tmp/srv/$name.git"
	[ "$(git show main:plan.md | grep -c '^- \[x\]')" -eq "$S" ] || evidence "not every story landed"
	[ "$(git rev-list --count --merges main)" -eq "$S" ] || evidence "a story landed twice or not at all"
	ev() { cat "$tmp/$name"-m*/.ralph/wiggum/events.jsonl | grep "\"event\":\"$1\""; }
	claim=$(ev claimed | sed 's/.*"claim_ms":\([0-9.]*\).*/\1/' | sum)
	land=$(ev landed | sed 's/.*"land_ms":\([0-9.]*\).*/\1/' | sum)
	pushes=$(ev remote_stats | sed 's/.*"pushes":\([0-9]*\).*/\1/' | sum)
	fetches=$(ev remote_stats | sed 's/.*"fetches":\([0-9]*\).*/\1/' | sum)
	retries=$(ev landed | sed 's/.*"attempts":\([0-9]*\).*/\1/' | awk '{s += $1 - 1} END {print s + 0}')
	w=$((t1 - t0))
	[ "$m" -eq 1 ] && single=$w
	scaling=n/a
	[ "$single" -gt 0 ] && scaling=$(printf '%.2f' "$(echo "$single / $w / $m" | bc -l)")
	ideal=$(echo "(($S + $m - 1) / $m) * $T * 1000000000" | bc)
	if [ "$m" = "${TIMELINE:-}" ]; then
		# TIMELINE=M: each machine's timeline of the M-machine run, and
		# where its wall time went (bench/remotetimeline).
		(cd "$here" && go run ./bench/remotetimeline "$t0" "$tmp/$name"-m*/.ralph/wiggum/events.jsonl)
	fi
	ahead=$(ev claimed | grep -c '"ahead":true' || true)
	rode=$(ev claimed | grep -c '"rode":true' || true)
	printf 'machines %d: %6.2f s wall, ideal %5.2f s, efficiency %.2f, scaling vs 1 machine %s; per story: claim %5.1f ms + landing %5.1f ms = %5.1f ms (%.1fx a push), %.2f pushes, %.2f fetches; landing retries %d; claimed ahead %d (in a landing push %d)\n' \
		"$m" "$(echo "$w / 1000000000" | bc -l)" "$(echo "$ideal / 1000000000" | bc -l)" "$(echo "$ideal / $w" | bc -l)" "$scaling" \
		"$(echo "$claim / $S" | bc -l)" "$(echo "$land / $S" | bc -l)" "$(echo "($claim + $land) / $S" | bc -l)" \
		"$(echo "($claim + $land) / $S / $pushrt" | bc -l)" \
		"$(echo "$pushes / $S" | bc -l)" "$(echo "$fetches / $S" | bc -l)" "$retries" "$ahead" "$rode"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
