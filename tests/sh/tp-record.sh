#!/usr/bin/env bash
# description: tracepoints recorded with record -e / DYNFTRACE_EVENTS: replay prints their fields in place, babeltrace2 reads the session, oversized payloads are counted lost
# config: asan
#
# tests/progs/tp-rec.c hits tp_msg (int, string, long, pointer fields) from
# main, a thread and a signal handler, with a NULL string and with a string
# too long for one event; tp_other is never selected; the dlopen'd
# tests/progs/tp-rec-lib.c has tp_lib. Verdicts compare exact text (thread
# ids normalised, no times), never timings.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"

DFT=$B/dynftrace
# record preloads libdynftrace.so before libasan (see golden.sh)
[ "$SAN" = asan ] && export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
if ! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS -fPIC -shared "$TOP/tests/progs/tp-rec-lib.c" \
	-o "$T/lib.so" -L"$B" -ldynftrace -Wl,-rpath,"$B" 2>"$T/build.log" ||
	! cc_prog "$T/prog" $TRACE_FLAGS "$TOP/tests/progs/tp-rec.c" 2>>"$T/build.log"; then
	notok "build tp-rec"
	diag_file "$T/build.log"
	exit 1
fi

# replay text with thread ids as T1, T2... in order of appearance
norm() {
	awk '{ if (match($0, /\[ *[0-9]+\]/)) { id = substr($0, RSTART, RLENGTH);
		if (!(id in m)) m[id] = "[T" (++n) "]"; $0 = substr($0, 1, RSTART - 1) m[id] substr($0, RSTART + RLENGTH) }
		print }' | sed -E 's/^# thread [0-9]+ lost/# thread T lost/' | grep -v '_ctor_\|_dtor_\|_sub_[ID]_\|asan\.module_\|^ *\[T[0-9]\] | *} /\* dynftrace_tp_ctor_'
}

# 1. record -e (two options, one a glob)
"$DFT" record -d "$T/s" -e 'tp_m*' -e tp_lib -- "$T/prog" "$T/lib.so" >"$T/rec.out" 2>&1
check $? "record -e tp_m* -e tp_lib exits 0"
cat >"$T/exp1" <<'X'
0 tp_msg i:4:fd s:0:buf i:8:len p:8:ptr
1 tp_lib u:8:v s:0:who
X
cat "$T"/s/tracepoints-*.txt >"$T/got1" 2>&1
if cmp -s "$T/exp1" "$T/got1"; then ok "tracepoints-IMG.txt describes the recorded tracepoints"; else
	notok "tracepoints-IMG.txt describes the recorded tracepoints"; diff "$T/exp1" "$T/got1" | diag_file /dev/stdin; fi

"$DFT" replay -d "$T/s" --no-time >"$T/replay" 2>"$T/replay.err"
check $? "replay exits 0"
cat >"$T/exp2" <<'X'
#     TID  FUNCTION
[T1] | ... lost 1 events
[T1] | main() {
[T1] |   work() {
[T1] |     /* tp: tp_msg(fd=1, buf="hello", len=-1000000000, ptr=0x1234) */
[T1] |   } /* work */
[T1] |   work() {
[T1] |     /* tp: tp_msg(fd=2, buf=(null), len=-2000000000, ptr=0x1234) */
[T1] |   } /* work */
[T1] |   work();
[T1] |   on_usr1() {
[T1] |     /* tp: tp_msg(fd=10, buf="in handler", len=0, ptr=0x0) */
[T1] |   } /* on_usr1 */
[T2] | thread_main() {
[T2] |   work() {
[T2] |     /* tp: tp_msg(fd=7, buf="thread", len=-7000000000, ptr=0x1234) */
[T2] |   } /* work */
[T2] | } /* thread_main */
[T1] |   lib_hit() {
[T1] |     /* tp: tp_lib(v=42, who="lib") */
[T1] |   } /* lib_hit */
[T1] |   work() {
[T1] |     /* tp: tp_msg(fd=4, buf="bye", len=-4000000000, ptr=0x1234) */
[T1] |   } /* work */
[T1] | } /* main */
# thread T lost 1 events
X
norm <"$T/replay" >"$T/got2"
if cmp -s "$T/exp2" "$T/got2"; then ok "replay shows every tracepoint with its fields, in place"; else
	notok "replay shows every tracepoint with its fields, in place"; diff "$T/exp2" "$T/got2" | diag_file /dev/stdin 40; fi

# the oversized payload (a 399-byte string) is one lost event of the main thread
pid=$(sed -n 's/^pid: //p' "$T/s/info" | head -1)
grep -qx "lost: $pid $pid 1" "$T/s/info"
check $? "the oversized payload is counted lost (info: lost: $pid $pid 1)"

if command -v babeltrace2 >/dev/null; then
	babeltrace2 "$T/s/ctf" >"$T/bt.out" 2>"$T/bt.err"
	rc=$?
	n=$(grep -c '} tracepoint: \|) tracepoint: ' "$T/bt.out")
	[ $rc -eq 0 ] && [ "$n" -eq 6 ]
	check $? "babeltrace2 reads the session: exit $rc, $n tracepoint events (want 6)"
	[ $rc -eq 0 ] || diag_file "$T/bt.err"
else
	skip "babeltrace2 is not installed"
fi

# 2. DYNFTRACE_EVENTS from the environment, no -e: only tp_lib
DYNFTRACE_EVENTS=tp_lib "$DFT" record -d "$T/s2" -- "$T/prog" "$T/lib.so" >/dev/null 2>&1
"$DFT" replay -d "$T/s2" --no-time 2>/dev/null | grep -F '/* tp:' | norm >"$T/got3"
echo '[T1] |     /* tp: tp_lib(v=42, who="lib") */' >"$T/exp3"
cmp -s "$T/exp3" "$T/got3"
check $? "DYNFTRACE_EVENTS=tp_lib records tp_lib only"

# 3. by default, no tracepoint is recorded
env -u DYNFTRACE_EVENTS "$DFT" record -d "$T/s3" -- "$T/prog" "$T/lib.so" >/dev/null 2>&1
n=$("$DFT" replay -d "$T/s3" --no-time 2>/dev/null | grep -c '/\* tp:')
! ls "$T"/s3/tracepoints-*.txt >/dev/null 2>&1 && [ "$n" -eq 0 ]
check $? "without -e no tracepoint is recorded ($n shown)"

# 4. the chrome dump names them too
"$DFT" dump --chrome -d "$T/s" -o "$T/t.json" 2>/dev/null
grep -qF 'tp_lib(v=42, who=\"lib\")' "$T/t.json"
check $? "dump --chrome shows tracepoint events"

tap_end
