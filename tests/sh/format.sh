#!/usr/bin/env bash
# description: every tracked C source and header is formatted as .clang-format says (clang-format 14)
#
# The project's style is its .clang-format; `make format` applies it. Other
# clang-format versions format differently: then the test says so and
# skips. Env: TOP.
. "$(dirname "$0")/../gen/common.sh"
cd "$TOP" || exit 1
if ! command -v clang-format >/dev/null; then
	skip "clang-format not installed"
elif ! clang-format --version | grep -q 'version 14\.'; then
	skip "clang-format is not version 14: $(clang-format --version)"
elif ! command -v git >/dev/null || ! git rev-parse --git-dir >/dev/null 2>&1; then
	skip "not a git checkout: no list of tracked files"
else
	bad=$(git ls-files '*.c' '*.h' | while read -r f; do
		clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
	done)
	if [ -z "$bad" ]; then
		ok "clang-format --dry-run --Werror: every tracked .c and .h"
	else
		notok "not formatted (run make format): $(echo "$bad" | tr '\n' ' ')"
	fi
fi
tap_end
