#!/usr/bin/env bash
# description: dlopen/dlclose of traced libraries under registered ops; preload mode
# config: asan tsan
#
# 1. tests/progs/dlt-main.c (linked with the runtime) dlopens
#    tests/progs/dlt-lib.c built with the trace flags after two ops are
#    registered: sites NOPs first, traced per the filters, filters replayed
#    after dlclose + dlopen, 100 cycles under load (see dlt-main.c).
# 2. The same program with LD_PRELOAD=libdynftrace.so as well.
# 3. tests/progs/preload.c built with the trace flags but not linked with the
#    runtime, run with LD_PRELOAD: same output, its entry converted to the
#    runtime's disabled site (the architecture's forms), nothing alarming
#    with DYNFTRACE_VERBOSE=1; it dlopens the traced library too.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
P=$TOP/tests/progs
LIB=libdlt.so

if ! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS -fPIC -shared "$P/dlt-lib.c" -o "$T/$LIB" \
	2>"$T/build.log" ||
	! cc_prog "$T/dlt-main" $TRACE_FLAGS "$P/dlt-main.c" -Wl,-rpath,'$ORIGIN' \
		2>>"$T/build.log" ||
	! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS "$P/preload.c" -o "$T/preload" -lpthread -ldl \
		2>>"$T/build.log"; then
	echo "not ok 1 - build the dlopen programs"
	diag_file "$T/build.log"
	exit 1
fi

# The sanitizers' dlopen interceptors make themselves the caller: the
# program's run path is not searched (with or without dynftrace), so open by
# path there.
BYPATH=
[ -n "$SAN" ] && BYPATH=by-path
tap_prog "dlt-main: dlopen after register, dlclose, dlopen again" "$T/dlt-main" "$T" $LIB $BYPATH

# Preloading a sanitizer-built runtime: the sanitizer's runtime comes first.
PRE=$B/libdynftrace.so
case "$SAN" in
asan)
	PRE="$($CC -print-file-name=libasan.so) $PRE"
	export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0"
	;;
tsan) PRE="$($CC -print-file-name=libtsan.so) $PRE" ;;
esac
tap_prog "dlt-main, linked and also LD_PRELOADed" env LD_PRELOAD="$PRE" "$T/dlt-main" "$T" $LIB \
	$BYPATH

"$T/preload" "$T/$LIB" >"$T/plain.out" 2>&1
rc0=$?
env LD_PRELOAD="$PRE" DYNFTRACE_VERBOSE=1 "$T/preload" "$T/$LIB" >"$T/pre.out" 2>"$T/pre.err"
rc1=$?
if [ $rc0 -eq 0 ] && [ $rc1 -eq 0 ] &&
	cmp -s <(grep -v '^entry' "$T/plain.out") <(grep -v '^entry' "$T/pre.out"); then
	ok "preload mode: a traced program not linked with the runtime runs the same"
else
	notok "preload mode: status $rc1 (without: $rc0), or different output"
	cat "$T/plain.out" "$T/pre.out" "$T/pre.err" | head -20 | sed -e 's/^/# /'
fi
# The entry as the compiler left it, and as the runtime makes it (site
# disabled). x86-64: gcc leaves five 1-byte NOPs, clang 0f 1f 44 00 08; the
# runtime makes both the canonical NOP5. aarch64: two NOPs; the first
# becomes the site's marker `mov x9, x30`, the site stays NOP. riscv64:
# four c.nop (two NOPs without RVC); the first word becomes the marker
# `auipc t0, hi` (hi: the distance to the trampoline region), the site
# word the 4-byte NOP.
case "$ARCH" in
aarch64)
	plain_re='1f 20 03 d5 1f 20 03 d5'
	pre_re='e9 03 1e aa 1f 20 03 d5'
	;;
riscv64)
	plain_re='(01 00 01 00 01 00 01 00|13 00 00 00 13 00 00 00)'
	pre_re='97 [0-9a-f]2 [0-9a-f]{2} [0-9a-f]{2} 13 00 00 00'
	;;
*)
	plain_re='(90 90 90 90 90|0f 1f 44 00 08)'
	pre_re='0f 1f 44 00 00'
	;;
esac
if grep -Eq "^entry $plain_re\$" "$T/plain.out" && grep -Eq "^entry $pre_re\$" "$T/pre.out"; then
	ok "preload mode: the entry became the runtime's disabled site ($(sed -n 's/^entry //p' "$T/plain.out") -> $(sed -n 's/^entry //p' "$T/pre.out"))"
else
	notok "preload mode: entry bytes: $(grep '^entry' "$T/plain.out") / $(grep '^entry' "$T/pre.out")"
fi
if grep -Eiq 'refus|stopped|fail|cannot|error|unexpected|warn' "$T/pre.err"; then
	notok "preload mode: DYNFTRACE_VERBOSE=1 reports a problem"
	diag_file "$T/pre.err" 10
else
	ok "preload mode: nothing alarming with DYNFTRACE_VERBOSE=1 ($(wc -l <"$T/pre.err") lines)"
	diag_file "$T/pre.err" 5
fi
tap_end
