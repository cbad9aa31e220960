#!/usr/bin/env bash
# description: under emulation: batches of 1, 1,000 and 100,000 sites take exactly one sync each
#
# tests/sh/batch-syncs.sh for a cross-built ARCH: tests/stress/batch.c
# linked with 100,000 functions from `tests/gen/genfuncs.sh -S -a ARCH`,
# run with a worker calling every function during the batches, then alone.
# Env: TOP B ARCH RUN_CMD (the emulator), CC_CROSS (default ARCH-linux-gnu-gcc).
set -u
read -r -a RUN <<<"$RUN_CMD"
CC=${CC_CROSS:-$ARCH-linux-gnu-gcc}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
if ! bash "$TOP/tests/gen/genfuncs.sh" -S -a "$ARCH" 100000 >"$T/funcs.s" ||
	! $CC -c "$T/funcs.s" -o "$T/funcs.o" 2>"$T/build.log" ||
	! $CC -std=gnu11 -O2 -g -D_GNU_SOURCE -I"$TOP/include" "$TOP/tests/stress/batch.c" \
		"$T/funcs.o" -o "$T/batch" -L"$B" -Wl,--no-as-needed -ldynftrace -Wl,--as-needed \
		-Wl,-rpath,"$B" -lpthread 2>>"$T/build.log"; then
	echo "not ok 1 - build the batch program"
	sed 's/^/# /' "$T/build.log" | head -20
	exit 1
fi
rc=0
"${RUN[@]}" "$T/batch" || rc=1
"${RUN[@]}" "$T/batch" -q || rc=1
exit $rc
