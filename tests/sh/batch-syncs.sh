#!/usr/bin/env bash
# description: batches of 1, 1,000 and 100,000 sites take exactly 3 syncs each
# config: asan tsan
#
# tests/stress/batch.c linked with 100,000 functions written as assembly by
# `tests/gen/genfuncs.sh -S` (gcc needs ~35 s for them in C; gas ~1 s). Run
# twice: with a worker calling every function during the batches, and alone
# (then every callback is counted). Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"

if ! bash "$TOP/tests/gen/genfuncs.sh" -S 100000 >"$T/funcs.s" ||
	! $CC -c "$T/funcs.s" -o "$T/funcs.o" 2>"$T/build.log" ||
	! cc_prog "$T/batch" "$TOP/tests/stress/batch.c" "$T/funcs.o" 2>>"$T/build.log"; then
	echo "not ok 1 - build the batch program"
	diag_file "$T/build.log"
	exit 1
fi
rc=0
"$T/batch" || rc=1
"$T/batch" -q || rc=1
exit $rc
