#!/usr/bin/env bash
# description: the runtime, the command, the examples and the unit tests build warning-free (-Wall -Wextra -Werror) with gcc and clang
#
# The project's rule: -Wall -Wextra clean with gcc 12 and clang 14. Each
# available compiler builds everything into a scratch directory with
# -Werror; a warning fails the test and is shown. Env: TOP CC.
. "$(dirname "$0")/../gen/common.sh"

for cc in gcc clang; do
	if ! command -v $cc >/dev/null; then
		skip "$cc not installed"
		continue
	fi
	if make -s -C "$TOP" B_OVERRIDE="$T/$cc" CC=$cc WARN="-Wall -Wextra -Werror" \
		lib cli examples tests >"$T/$cc.log" 2>&1; then
		ok "$cc: -Wall -Wextra -Werror build"
	else
		notok "$cc: -Wall -Wextra -Werror build"
		grep -E 'warning|error' "$T/$cc.log" | head -20 | sed -e 's/^/# /'
	fi
done
tap_end
