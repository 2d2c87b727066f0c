#!/usr/bin/env bash
# Installs the real agent clients the conformance suite drives, at pinned
# versions, into a cache outside the work tree:
#   ${WIGGUM_AGENT_CACHE:-$HOME/.cache/wiggum-agents}/<pkg>@<version>/node_modules/.bin/<bin>
# Idempotent: a client already installed at its pinned version is skipped.
# The pins are the versions the suite was checked against; bump them here
# (and in conformance/README.md) together.
set -euo pipefail

cache=${WIGGUM_AGENT_CACHE:-$HOME/.cache/wiggum-agents}
pins=(
	"@anthropic-ai/claude-code@2.1.332 claude"
	"@openai/codex@0.171.0 codex"
	"@google/gemini-cli@0.61.0 gemini"
)

mkdir -p "$cache"
for pin in "${pins[@]}"; do
	set -- $pin
	spec=$1 bin=$2
	dir="$cache/${spec//\//+}"
	if [ -x "$dir/node_modules/.bin/$bin" ] && [ -e "$dir/.installed" ]; then
		echo "have $spec"
		continue
	fi
	echo "installing $spec into $dir"
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	npm install --prefix "$dir.tmp" --no-save --no-audit --no-fund --loglevel=error "$spec" >/dev/null
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	# npm wrote absolute paths nowhere we depend on: .bin links are relative.
	touch "$dir/.installed"
done

# The JavaScript world's git hooks, for e2e/commitmsg_test.go: husky runs
# commitlint (conventional commits) as the commit-msg hook. One directory
# holds the three packages a project would have in its devDependencies:
#   $cache/git-hooks/node_modules/.bin/{commitlint,husky}
hooks_dir="$cache/git-hooks"
hooks_pins="@commitlint/cli@20.5.3 @commitlint/config-conventional@20.5.3 husky@9.1.7"
if [ -x "$hooks_dir/node_modules/.bin/commitlint" ] && [ "$(cat "$hooks_dir/.installed" 2>/dev/null)" = "$hooks_pins" ]; then
	echo "have $hooks_pins"
else
	echo "installing $hooks_pins into $hooks_dir"
	rm -rf "$hooks_dir.tmp"
	mkdir -p "$hooks_dir.tmp"
	npm install --prefix "$hooks_dir.tmp" --no-save --no-audit --no-fund --loglevel=error $hooks_pins >/dev/null
	rm -rf "$hooks_dir"
	mv "$hooks_dir.tmp" "$hooks_dir"
	echo "$hooks_pins" > "$hooks_dir/.installed"
fi
