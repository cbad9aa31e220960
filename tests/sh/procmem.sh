#!/usr/bin/env bash
# description: code writes through /proc/self/mem (DYNFTRACE_POKE=procmem) pass the same tests
# config: asan tsan
#
# The fallback for systems that refuse writable+executable mappings: t-basic,
# a short stress run and the 100,000-site batch test with
# DYNFTRACE_POKE=procmem. With strace present, also checks that code was
# written with pwrite64 and never mapped writable+executable.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
export DYNFTRACE_POKE=procmem

if [ -x "$B/tests/t-basic" ]; then
	tap_prog "t-basic with DYNFTRACE_POKE=procmem" "$B/tests/t-basic"
else
	notok "$B/tests/t-basic is not built"
fi

if bash "$TOP/tests/gen/genfuncs.sh" 1000 >"$T/funcs.c" &&
	$CC -std=gnu11 -O2 $TRACE_FLAGS -c "$T/funcs.c" -o "$T/funcs.o" 2>"$T/build.log" &&
	cc_prog "$T/stress" "$TOP/tests/stress/stress.c" "$T/funcs.o" 2>>"$T/build.log" &&
	bash "$TOP/tests/gen/genfuncs.sh" -S 100000 >"$T/big.s" &&
	$CC -c "$T/big.s" -o "$T/big.o" 2>>"$T/build.log" &&
	cc_prog "$T/batch" "$TOP/tests/stress/batch.c" "$T/big.o" 2>>"$T/build.log"; then
	tap_prog "stress, 1,000 changes, with DYNFTRACE_POKE=procmem" "$T/stress" -n 1000 -W 50
	tap_prog "batches of 1 to 100,000 sites with DYNFTRACE_POKE=procmem" "$T/batch"
	grep -E 'register, 100000' "$T/tap.out" | sed -e 's/^ok [0-9]* - /# /'
else
	notok "build the stress and batch programs"
	diag_file "$T/build.log"
fi

# LeakSanitizer does not work under ptrace.
if command -v strace >/dev/null && [ -x "$B/tests/t-basic" ] &&
	ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
		strace -f -qq -e trace=mprotect,pwrite64,openat -o "$T/strace" "$B/tests/t-basic" \
		>/dev/null 2>&1; then
	if grep -q 'pwrite64(' "$T/strace" && grep -q '/proc/self/mem' "$T/strace"; then
		ok "code written with pwrite64 to /proc/self/mem ($(grep -c 'pwrite64(' "$T/strace") writes)"
	else
		notok "no pwrite64 to /proc/self/mem seen"
	fi
	if grep -E 'mprotect\(.*PROT_WRITE\|PROT_EXEC' "$T/strace" >"$T/wx"; then
		notok "a mapping was made writable+executable"
		diag_file "$T/wx" 5
	else
		ok "no mapping made writable+executable"
	fi
else
	skip "strace missing or cannot trace here"
fi
tap_end
