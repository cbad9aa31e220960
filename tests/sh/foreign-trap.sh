#!/usr/bin/env bash
# description: a program whose SIGTRAP is SIG_DFL still dies by SIGTRAP under the runtime
# config: asan tsan
#
# tests/progs/trapper.c built with the trace flags, once linked with the
# runtime and once without it: int3 (default, SIG_IGN, in a thread blocking
# every signal), raise() (default, SIG_IGN) must end with the same status
# (128 + SIGTRAP = 133, or 0 for an ignored raise) in both builds.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
ulimit -c 0

src=$TOP/tests/progs/trapper.c
if ! cc_prog "$T/with" $TRACE_FLAGS "$src" 2>"$T/build.log" ||
	! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS "$src" -o "$T/without" -lpthread 2>>"$T/build.log"; then
	echo "not ok 1 - build trapper"
	diag_file "$T/build.log"
	exit 1
fi
if ! readelf -d "$T/with" | grep -q "NEEDED.*libdynftrace"; then
	echo "not ok 1 - trapper is not linked with the runtime"
	exit 1
fi
echo "1..6"
for mode in int3 ign-int3 blocked-int3 raise ign-raise traced; do
	# in subshells: the shell's "Trace/breakpoint trap" notes go nowhere
	want=$( ("$T/without" $mode >/dev/null 2>"$T/without.err"; echo $?) 2>/dev/null)
	got=$( ("$T/with" $mode >/dev/null 2>"$T/with.err"; echo $?) 2>/dev/null)
	exp=133
	[ $mode = ign-raise ] && exp=0
	if [ $got -eq $want ] && [ $got -eq $exp ]; then
		ok "$mode: status $got, as without the runtime"
	else
		notok "$mode: status $got with the runtime, $want without (want $exp)"
		diag_file "$T/with.err" 5
	fi
done
tap_end
