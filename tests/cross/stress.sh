#!/usr/bin/env bash
# description: under emulation: workers call 1,000 functions while two ops are (un)registered and refiltered
#
# tests/sh/stress.sh for a cross-built ARCH: tests/stress/stress.c linked
# with 1,000 functions from tests/gen/genfuncs.sh built with the flags the
# cross-built `dynftrace cflags` prints, run under the emulator: 3 workers
# (one blocking every signal) call them in tight loops while the main
# thread registers, unregisters and refilters two ops, every callback
# counted against a model of the filters in quiet windows (stress.c).
# STRESS_ARGS (default "-n 2000 -W 50": the same checks as the native
# run's 5,000 changes, fewer of them, under emulation).
# Env: TOP B ARCH RUN_CMD, CC_CROSS (default ARCH-linux-gnu-gcc).
set -u
read -r -a RUN <<<"$RUN_CMD"
CC=${CC_CROSS:-$ARCH-linux-gnu-gcc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
TF=$("${RUN[@]}" "$B/dynftrace" cflags) || TF=unknown-site-flags
if ! bash "$TOP/tests/gen/genfuncs.sh" 1000 >"$T/funcs.c" ||
	! $CC -std=gnu11 -O2 $TF -c "$T/funcs.c" -o "$T/funcs.o" 2>"$T/build.log" ||
	! $CC -std=gnu11 -O2 -g -D_GNU_SOURCE -I"$TOP/include" "$TOP/tests/stress/stress.c" \
		"$T/funcs.o" -o "$T/stress" -L"$B" -Wl,--no-as-needed -ldynftrace -Wl,--as-needed \
		-Wl,-rpath,"$B" -lpthread 2>>"$T/build.log"; then
	echo "not ok 1 - build the stress program"
	sed 's/^/# /' "$T/build.log" | head -20
	exit 1
fi
# shellcheck disable=SC2086
"${RUN[@]}" "$T/stress" ${STRESS_ARGS:--n 2000 -W 50}
rc=$?
[ $rc -eq 0 ] || echo "# stress exited with status $rc"
exit $rc
