#!/usr/bin/env bash
# description: workers call 1,000 functions while two ops are (un)registered and refiltered 5,000 times
# config: asan tsan
#
# tests/stress/stress.c linked with 1,000 functions from tests/gen/genfuncs.sh:
# 3 workers (one blocking every signal) call them in tight loops while the
# main thread makes 5,000 successful register/unregister/set_filter/
# set_notrace calls on two ops, with quiet windows where every callback is
# counted against a model of the filters. See stress.c for the checks.
# The generated functions are built without sanitizers (they touch no
# memory; ASan's module constructors would add sites outside the model).
# Under TSan (about 6x slower) 2,000 changes instead of 5,000. Env: TOP B CC
# SAN; STRESS_ARGS passes options to stress (e.g. "-n 50000 -s 7").
. "$(dirname "$0")/../gen/common.sh"

if ! bash "$TOP/tests/gen/genfuncs.sh" 1000 >"$T/funcs.c" ||
	! $CC -std=gnu11 -O2 $TRACE_FLAGS -c "$T/funcs.c" -o "$T/funcs.o" 2>"$T/build.log" ||
	! cc_prog "$T/stress" "$TOP/tests/stress/stress.c" "$T/funcs.o" 2>>"$T/build.log"; then
	echo "not ok 1 - build the stress program"
	diag_file "$T/build.log"
	exit 1
fi
args=${STRESS_ARGS:-}
[ "$SAN" = tsan ] && [ -z "$args" ] && args="-n 2000 -W 50"
# shellcheck disable=SC2086
"$T/stress" $args
rc=$?
[ $rc -eq 0 ] || echo "# stress exited with status $rc"
exit $rc
