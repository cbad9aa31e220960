#!/usr/bin/env bash
# description: runtime messages are bounded per call site: said once, or verbose-only and rate-limited with a count; a note at every dlclose does not flood
# config: asan tsan
#
# 1. tests/progs/log-limit.c drives lib/core/log.c alone, built with 1-second
#    windows: an always-shown message called 1000 times is shown once
#    (its repeats only with DYNFTRACE_VERBOSE); a verbose one called more
#    than the burst within a window shows the burst, and its next line in a
#    later window counts exactly the calls not shown; threads calling one
#    site at once never show more lines than calls, and every line whole.
# 2. tests/progs/dlt-loop.c closes and reopens a traced library 200 times while
# an ops selects only its functions: at every dlclose the runtime notes that
# the ops' whole selection went (information). Without DYNFTRACE_VERBOSE the
# program's stderr gets none of it and no line twice; with it, the note is
# there, rate-limited per call site (fewer lines than cycles, each shown line
# after a pause counting the ones not shown).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
P=$TOP/tests/progs
N=200
MSG='every function selected by an ops was unloaded'
if ! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS -fPIC -shared "$P/dlt-lib.c" -o "$T/libdlt.so" \
	2>"$T/build.log" ||
	! cc_prog "$T/dlt-loop" $TRACE_FLAGS "$P/dlt-loop.c" 2>>"$T/build.log" ||
	! $CC $CFLAGS_T $SANFLAGS -DDFT_LOG_WINDOW_S=1 $LIB_INC "$TOP/lib/core/log.c" "$P/log-limit.c" -o "$T/log-limit" \
		-lpthread 2>>"$T/build.log"; then
	echo "not ok 1 - build the test programs"
	diag_file "$T/build.log"
	exit 1
fi
unset DYNFTRACE_VERBOSE

# sum_skipped FILE WORD: the counts "(N more not shown)" of WORD's lines.
sum_skipped() {
	grep -E "^dynftrace\[[0-9]+\]: $2( |\$)" "$1" |
		sed -n 's/.*(\([0-9]*\) more not shown)$/\1/p' | awk '{s += $1} END {print s + 0}'
}
lines() { grep -cE "^dynftrace\[[0-9]+\]: $2( \([0-9]+ more not shown\))?\$" "$1"; }

"$T/log-limit" 0 4 >"$T/l0.out" 2>"$T/l0.err"
rc=$?
if [ $rc = 0 ] && [ "$(wc -l <"$T/l0.err")" = 1 ] &&
	grep -Eqx 'dynftrace\[[0-9]+\]: said once' "$T/l0.err"; then
	ok "quiet: an always-shown message called 1000 times is shown once, nothing else"
else
	notok "quiet: status $rc, $(wc -l <"$T/l0.err") lines"
	diag_file "$T/l0.err"
fi
"$T/log-limit" 1 4 >"$T/l1.out" 2>"$T/l1.err"
rc=$?
check $rc "verbose: the driver runs (status $rc)"
bad=$(grep -vcE '^dynftrace\[[0-9]+\]: (said once|burst|threads)( \([0-9]+ more not shown\))?$' "$T/l1.err")
check $((bad != 0)) "verbose: every line whole ($bad not)"
n=$(lines "$T/l1.err" 'said once')
k=$(sum_skipped "$T/l1.err" 'said once')
head -1 "$T/l1.err" | grep -Eqx 'dynftrace\[[0-9]+\]: said once'
check $(($? != 0 || n < 2 || n + k > 1000)) \
	"verbose: the always-shown message first, then its repeats rate-limited ($n lines, $k counted)"
calls=$(sed -n 's/^burst //p' "$T/l1.out")
n=$(lines "$T/l1.err" burst)
k=$(sum_skipped "$T/l1.err" burst)
last=$(grep -E '^dynftrace\[[0-9]+\]: burst' "$T/l1.err" | tail -1)
check $((n + k != calls || k == 0)) \
	"verbose: a burst is cut and the next line counts the rest ($calls calls: $n lines, $k counted; last: $last)"
calls=$(sed -n 's/^threads //p' "$T/l1.out")
n=$(lines "$T/l1.err" threads)
k=$(sum_skipped "$T/l1.err" threads)
check $((n < 1 || n + k > calls)) "verbose: 4 threads at one site ($calls calls: $n lines, $k counted)"

"$T/dlt-loop" "$T/libdlt.so" $N >"$T/q.out" 2>"$T/q.err"
rc=$?
if [ $rc = 0 ] && grep -qx "cycles $N traced $N" "$T/q.out"; then
	ok "$N dlopen/dlclose cycles, the filter back after each ($(cat "$T/q.out"))"
else
	notok "the dlopen loop: status $rc, $(cat "$T/q.out")"
	diag_file "$T/q.err"
fi
n=$(grep -c "$MSG" "$T/q.err")
check $((n != 0)) "without DYNFTRACE_VERBOSE: the note is not shown ($n lines)"
dups=$(grep '^dynftrace\[' "$T/q.err" | sort | uniq -d)
check $((${#dups} != 0)) "without DYNFTRACE_VERBOSE: no runtime line twice${dups:+: $dups}"
[ -n "$dups" ] && diag_file "$T/q.err"

DYNFTRACE_VERBOSE=1 "$T/dlt-loop" "$T/libdlt.so" $N >"$T/v.out" 2>"$T/v.err"
rc=$?
check $rc "with DYNFTRACE_VERBOSE=1: the loop runs (status $rc)"
n=$(grep -c "$MSG" "$T/v.err")
# Each shown line may count the lines skipped before it: shown + skipped
# cannot exceed the cycles, and the first line is shown whole.
skipped=$(sum_skipped "$T/v.err" "$MSG")
if [ "$n" -ge 1 ] && [ "$n" -lt $N ] && [ $((n + skipped)) -le $N ] &&
	grep -m1 "$MSG" "$T/v.err" | grep -Eqx "dynftrace\[[0-9]+\]: $MSG"; then
	ok "with DYNFTRACE_VERBOSE=1: the note is shown, rate-limited ($n lines for $N cycles, $skipped counted as not shown)"
else
	notok "with DYNFTRACE_VERBOSE=1: $n lines of the note for $N cycles ($skipped counted as not shown)"
	diag_file "$T/v.err"
fi
tap_end
