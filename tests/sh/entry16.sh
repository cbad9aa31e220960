#!/usr/bin/env bash
# description: entries of site ids up to 65535 take 4 bytes (entry16), above it 6; both read back as one function's call
# config: asan
#
# 70,000 functions (tests/gen/genfuncs.sh -S: site id I is function I), each
# called once, recorded by function_graph through the common route, through
# the generic one (-F, a graph list) and as relocated entries (-P, x86-64),
# so that every writer of both entry forms runs. Every function must be reported with one call, the ones
# on both sides of the 16-bit limit named, and the streams must hold
# entry16 events (4 bytes) for the ids up to 65535 and 32-bit entries (6)
# above, as tests/ring/t-ring's own decoder counts them. Env: TOP B CC SAN
# ARCH.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san

N=70000
aflag=
[ "$ARCH" != x86_64 ] && aflag="-a $ARCH"
cat >"$T/drv.c" <<'EOF'
#include <stdio.h>
extern const unsigned long gen_nfuncs;
extern unsigned long (*const gen_funcs[])(unsigned long);
int main(int argc, char **argv)
{
	unsigned long s = 0, step = argc > 1 ? 3 : 1; /* 3: the f_ functions only */
	for (unsigned long i = 0; i < gen_nfuncs; i += step)
		s += gen_funcs[i](i);
	printf("sum %lu\n", s);
	return 0;
}
EOF
# shellcheck disable=SC2086
if ! bash "$TOP/tests/gen/genfuncs.sh" -S $aflag $N >"$T/funcs.s" ||
	! $CC -c "$T/funcs.s" -o "$T/funcs.o" 2>"$T/build.log" ||
	! $CC $SANFLAGS "$T/drv.c" "$T/funcs.o" -o "$T/prog" 2>>"$T/build.log"; then
	notok "build the program of $N functions"
	diag_file "$T/build.log"
	exit 1
fi
build_t_ring

# check_trace NAME CALLS SHORT LONG DIR: CALLS functions reported once each,
# f_00000, f_65535 and f_69999 among them; SHORT entry16 events and LONG
# 32-bit entries in the streams.
check_trace() {
	local name=$1 calls=$2 short=$3 long=$4 dir=$5
	if ! "$DFT" report -d "$dir" >"$T/report" 2>"$T/report.err"; then
		notok "$name: report fails"
		diag_file "$T/report.err"
		return
	fi
	local once named
	once=$(awk 'NR > 2 && $(NF - 1) == 1' "$T/report" | wc -l)
	named=$(grep -cwE 'f_00000|f_65535|f_69999' "$T/report")
	if [ "$once" = "$calls" ] && [ "$named" = 3 ]; then
		ok "$name: $calls functions with one call each, both sides of id 65535"
	else
		notok "$name: $once functions with one call (expected $calls), $named of f_00000 f_65535 f_69999"
		diag_file "$T/report" 6
	fi
	# t-ring's own decoder counts the events by the id they were written with
	if ! "$T/t-ring" ids "$dir" >"$T/ids" 2>"$T/ids.err"; then
		notok "$name: t-ring's decoder rejects the trace"
		diag_file "$T/ids.err"
		return
	fi
	local n16 n32
	n16=$(awk '$2 == 4 { print $3 }' "$T/ids")
	n32=$(awk '$2 == 0 { print $3 }' "$T/ids")
	if [ "${n16:-0}" = "$short" ] && [ "${n32:-0}" = "$long" ]; then
		ok "$name: $short entries of 4 bytes (entry16), $long of 6 (site ids above 65535)"
	else
		notok "$name: ${n16:-0} entry16 and ${n32:-0} entry events, expected $short and $long"
		diag_file "$T/ids"
	fi
}

# The common route (on x86-64 the graph shortcut's assembly).
if "$DFT" record -d "$T/all" -- "$T/prog" >"$T/out" 2>"$T/err"; then
	check_trace "every function" $N 65536 $((N - 65536)) "$T/all"
else
	notok "record of every function fails"
	diag_file "$T/err"
fi
# A graph list: the generic entry (C). f_ functions: ids divisible by 3.
short=$(((65535 / 3) + 1))
if "$DFT" record -F 'f_*' -d "$T/f" -- "$T/prog" f >"$T/out" 2>"$T/err"; then
	check_trace "-F 'f_*'" $(((N + 2) / 3)) $short $(((N + 2) / 3 - short)) "$T/f"
else
	notok "record -F 'f_*' fails"
	diag_file "$T/err"
fi
# Relocated entries (-P, x86-64: the preserving thunks and their own entry
# code): the same functions without their site records.
if [ "$ARCH" = x86_64 ]; then
	if objcopy --remove-section=__patchable_function_entries "$T/funcs.o" "$T/plain.o" &&
		$CC $SANFLAGS "$T/drv.c" "$T/plain.o" -o "$T/plain" 2>>"$T/build.log"; then
		if "$DFT" record -P '[fgh]_*' -d "$T/p" -- "$T/plain" >"$T/out" 2>"$T/err"; then
			check_trace "-P, relocated entries" $N 65536 $((N - 65536)) "$T/p"
		else
			notok "record -P fails"
			diag_file "$T/err"
		fi
	else
		notok "build the program without site records"
		diag_file "$T/build.log"
	fi
fi
tap_end
