#!/usr/bin/env bash
# description: the stress test on relocated entries: 1,000 functions built without sites, patched at start-up, called by workers while two ops are (un)registered and refiltered 5,000 times
# config: asan
#
# As tests/sh/stress.sh (tests/stress/stress.c; its quiet windows count
# every callback against a model of the filters), but the 1,000 generated
# functions are built with plain gcc -O2, no sites: DYNFTRACE_PATCH names
# them, so their entries are relocated when the program starts and every
# call goes through the preserving trampoline. Needs libcapstone4. Env: TOP
# B CC SAN; STRESS_ARGS as for stress.sh.
. "$(dirname "$0")/../gen/common.sh"
if ! ldconfig -p 2>/dev/null | grep -q 'libcapstone\.so\.4'; then
	echo "1..1"
	skip "libcapstone4 is not installed"
	exit 0
fi
if ! bash "$TOP/tests/gen/genfuncs.sh" 1000 >"$T/funcs.c" ||
	! $CC -std=gnu11 -O2 -c "$T/funcs.c" -o "$T/funcs.o" 2>"$T/build.log" ||
	! cc_prog "$T/stress" "$TOP/tests/stress/stress.c" "$T/funcs.o" 2>>"$T/build.log"; then
	echo "not ok 1 - build the stress program"
	diag_file "$T/build.log"
	exit 1
fi
args=${STRESS_ARGS:-}
# shellcheck disable=SC2086
DYNFTRACE_PATCH='[fgh]_[0-9]*' "$T/stress" $args
rc=$?
[ $rc -eq 0 ] || echo "# stress exited with status $rc"
exit $rc
