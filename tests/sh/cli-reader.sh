#!/usr/bin/env bash
# description: the trace reader on synthetic streams: timestamps, nesting, losses, filters, damage
# config: asan
#
# Sessions are written by tests/golden/mkstream.c from the scripts in
# tests/golden/streams/ (no runtime involved), then read back with
# replay, report, info and dump --chrome. Checks:
#  - compact timestamps across 8192 ns wraps, extended headers, several
#    packets: exact durations;
#  - nesting and leaves, a C++ name demangled, markers, lost events,
#    events_discarded increases, the info file's loss counts;
#  - calls still open at the end of a stream, exit_depth, an orphan exit;
#  - ctx_switch: frames set aside and brought back, contexts never switched
#    back to closed at the end, in replay and dump --chrome;
#  - the function tracer's flat lines, -t recordings' whole calls;
#  - replay's -F -N -D -t --tid; report's sorting; info's counts; valid JSON;
#  - damaged files: truncated mid-packet, bad magic, bad uuid, bad event id,
#    unknown function id, content_size > packet_size, a missing sites file:
#    one message naming the file and the offset, the events before it shown,
#    exit status 1, no crash (also under ASan: config asan).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
S=$TOP/tests/golden/streams

if ! $CC -std=gnu11 -O1 -g $SANFLAGS "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" \
	2>"$T/build.log"; then
	notok "build mkstream"
	diag_file "$T/build.log"
	exit 1
fi
for s in "$S"/*.txt; do
	n=$(basename "$s" .txt)
	if ! "$T/mkstream" "$T/$n" <"$s" 2>"$T/mk.err"; then
		notok "mkstream $n"
		diag_file "$T/mk.err"
	fi
done

# same NAME EXPECTED-FILE ACTUAL-FILE
same() {
	if diff -u "$2" "$3" >"$T/diff"; then
		ok "$1"
	else
		notok "$1"
		diag_file "$T/diff" 40
	fi
}

# run_ok NAME EXPECTED-STDOUT -- CMD...: exit 0, nothing on stderr, stdout as expected
run_ok() {
	local name=$1 exp=$2
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -ne 0 ] || [ -s "$T/err" ]; then
		notok "$name: exit status $rc"
		diag_file "$T/err"
		return
	fi
	printf '%s\n' "$exp" >"$T/exp"
	same "$name" "$T/exp" "$T/out"
}

# run_damaged NAME 'EXPECTED STDERR LINE' EXPECTED-STDOUT -- CMD...: exit 1,
# exactly one error line, stdout (what preceded the damage) as expected
run_damaged() {
	local name=$1 msg=$2 exp=$3
	shift 4
	"$@" >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -ne 1 ]; then
		notok "$name: exit status $rc, not 1"
		diag_file "$T/err"
		return
	fi
	if [ "$(wc -l <"$T/err")" -ne 1 ] || [ "$(cat "$T/err")" != "$msg" ]; then
		notok "$name: message"
		echo "# expected: $msg"
		diag_file "$T/err"
		return
	fi
	if [ "$exp" != "-" ]; then
		printf '%s\n' "$exp" >"$T/exp"
		same "$name" "$T/exp" "$T/out"
	else
		ok "$name"
	fi
}

run_ok "replay: nesting, leaves, threads by time, C++ name, marker, lost, unfinished" \
	"# DURATION     TID     FUNCTION
            [   100] | main() {
            [   100] |   foo() {
   0.100 us [   101] | foo();
   0.180 us [   100] |     bar();
   0.000 us [   101] | bar(); (unfinished)
   0.100 us [   100] |     ns::Cls::method();
   1.234 us [   100] |   } /* foo */
            [   100] |   /* hello world */
            [   100] |   ... lost 3 events
   0.100 us [   100] |   lib_fn();
   2.000 us [   100] | } /* main */
# thread 100 lost 3 events" -- "$DFT" replay -d "$T/basic"

run_ok "replay: compact timestamps across wraps, extended headers, two packets" \
	"# DURATION     TID     FUNCTION
            [     7] | main() {
   0.100 us [     7] |   a();
   0.090 us [     7] |   b();
   0.010 us [     7] |   a();
   8.191 us [     7] |   b();
   8.191 us [     7] |   a();
   1.992 ms [     7] | } /* main */" -- "$DFT" replay -d "$T/wrap"

run_ok "replay: discarded events, lost events, info loss counts with separators" \
	"# DURATION     TID     FUNCTION
            [     9] | main() {
   0.100 us [     9] |   work();
            [     9] |   ... lost 40 events
   0.100 us [     9] |   work();
            [     9] |   ... lost 2 events
   5.900 us [     9] | } /* main */
# thread 9 lost 5,122 events
# thread 10 lost 7 events" -- "$DFT" replay -d "$T/lost"

# A fork child (8) continues its parent's (7) open frames main and spawn
# (fork-8.txt): its work nests under them, its returns close them with
# durations from their entries in the parent; report counts those returns.
printf '%s\n' 'info command: ./fk' 'info tracer: function_graph' 'info start_ns: 0' \
	'info pid: 7' 'info pid: 8' \
	'site 7 0 1000 16 main /t/fk' 'site 7 1 1010 16 spawn /t/fk' 'site 7 2 1020 16 work /t/fk' \
	'site 8 0 1000 16 main /t/fk' 'site 8 1 1010 16 spawn /t/fk' 'site 8 2 1020 16 work /t/fk' \
	'stream 7 7' 'entry 1000 0' 'entry16 2000 1' 'exit 9000' 'exit 10000' \
	'stream 8 8' 'entry 4000 2' 'exit 4500' 'exit 5000' 'entry 6000 2' 'exit 6100' 'exit 7000' |
	"$T/mkstream" "$T/fork"
printf 'parent: 7\ntime: 3000\nframe: 0 1000\nframe: 1 2000\n' >"$T/fork/fork-8.txt"
run_ok "replay: a fork child continues its parent's open frames" \
	"# DURATION     TID     FUNCTION
            [     7] | main() {
   7.000 us [     7] |   spawn();
            [     8] | main() {
            [     8] |   spawn() {
   0.500 us [     8] |     work();
   3.000 us [     8] |   } /* spawn */
   0.100 us [     8] |   work();
   6.000 us [     8] | } /* main */
   9.000 us [     7] | } /* main */" -- "$DFT" replay -d "$T/fork"
"$DFT" report -d "$T/fork" >"$T/fork.report" 2>&1
[ "$(awk '$NF == "main" || $NF == "spawn" { print $(NF - 1), $NF }' "$T/fork.report" | sort | tr '\n' ' ')" = "2 main 2 spawn " ]
check $? "report: main and spawn returned twice, once in each process"
for bad in 'parent: x' 'frame: 0' 'frame: 1 4000' 'frame: 9 1500' 'time: 3000;frame: 1 2000;frame: 0 1000'; do
	cp -r "$T/fork" "$T/forkbad"
	if [ "${bad%%;*}" = "$bad" ]; then
		printf 'parent: 7\ntime: 3000\n%s\n' "$bad" >"$T/forkbad/fork-8.txt"
	else
		printf 'parent: 7\n%s\n' "$bad" | tr ';' '\n' >"$T/forkbad/fork-8.txt"
	fi
	"$DFT" replay -d "$T/forkbad" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "$T/forkbad/fork-8.txt" "$T/err"
	check $? "a damaged fork file ('$bad'): one message naming it, status 1 ($(cat "$T/err"))"
	rm -rf "$T/forkbad"
done

run_ok "replay: function tracer lines with callers" \
	"#     TIMESTAMP      TID  FUNCTION
    0.000001000 [     5] main() <- 0x7f0000000010
    0.000002000 [     5] foo() <- main
    0.000003000 [     5] foo() <- 0x401030 [flat]" -- "$DFT" replay -d "$T/function"

run_ok "replay: the whole calls of a -t recording, nested as they ran" \
	"# DURATION     TID     FUNCTION
            [    11] | main() {
   3.000 us [    11] |   slow();
   2.500 us [    11] |   slow();
  29.000 us [    11] | } /* main */" -- "$DFT" replay -d "$T/calls"

# report of a -t recording: self times from the nesting, a recursive
# function's total its outermost call's (as from entries and exits)
"$DFT" report -d "$T/callsrec" >"$T/o" 2>"$T/e"
awk '$NF == "f" && $1 == "8.000" && $3 == "8.000" && $(NF-1) == 2 { a = 1 }
	$NF == "main" && $1 == "9.500" && $3 == "1.500" { b = 1 } END { exit !(a && b) }' "$T/o"
check $? "report of a -t recording: self time, recursion counted once"
[ -s "$T/e" ] && diag_file "$T/e"

run_ok "replay: exit_depth unwinds, orphan exit ignored" \
	"# DURATION     TID     FUNCTION
            [    12] | main() {
            [    12] |   top() {
   0.100 us [    12] |     jumper(); (unwound)
   0.200 us [    12] |   } /* top */ (unwound)
   0.100 us [    12] |   after();
   0.600 us [    12] | } /* main */" -- "$DFT" replay -d "$T/unwind"

run_ok "replay: exit_lost closes the calls whose exits were dropped" \
	"# DURATION     TID     FUNCTION
            [    13] | main() {
            [    13] |   outer() {
            [    13] |     inner() {
            [    13] |       ... lost 6 events
   0.600 us [    13] |     } /* inner */ (exit lost)
   0.700 us [    13] |   } /* outer */ (exit lost)
   0.100 us [    13] |   next();
   1.100 us [    13] | } /* main */
# thread 13 lost 6 events" -- "$DFT" replay -d "$T/exitlost"

run_ok "replay: ctx_switch sets frames aside and back, never resumed ones end unfinished" \
	"# DURATION     TID     FUNCTION
            [    13] | main() {
            [    13] |   next() {
            [    13] | /* context 0 -> 1 */
            [    13] | gen() {
            [    13] |   yield() {
            [    13] |     /* context 1 -> 0 */
   0.500 us [    13] |   } /* next */
   0.100 us [    13] |   use();
            [    13] |   next() {
            [    13] |     /* context 0 -> 1 */
   0.700 us [    13] |   } /* yield */
            [    13] |   yield() {
            [    13] |     /* context 1 -> 0 */
   0.500 us [    13] |   } /* next */
   1.500 us [    13] | } /* main */
            [    13] |     /* context 0 -> 1 */
   0.300 us [    13] |   } /* yield */ (unfinished)
   1.200 us [    13] | } /* gen */ (unfinished)" -- "$DFT" replay -d "$T/context"

run_ok "replay -F foo: foo and its callees" \
	"# DURATION     TID     FUNCTION
            [   100] | foo() {
   0.100 us [   101] | foo();
   0.180 us [   100] |   bar();
   0.100 us [   100] |   ns::Cls::method();
   1.234 us [   100] | } /* foo */
            [   100] | /* hello world */
            [   100] | ... lost 3 events
# thread 100 lost 3 events" -- "$DFT" replay -d "$T/basic" -F foo

run_ok "replay -N foo -D 2 --no-time" \
	"#     TID  FUNCTION
[   100] | main() {
[   101] | bar(); (unfinished)
[   100] |   /* hello world */
[   100] |   ... lost 3 events
[   100] |   lib_fn();
[   100] | } /* main */
# thread 100 lost 3 events" -- "$DFT" replay -d "$T/basic" -N foo -D 2 --no-time

run_ok "replay -D 2: deeper calls hidden, their parent a leaf" \
	"#     TID  FUNCTION
[   100] | main() {
[   100] |   foo();
[   101] | foo();
[   101] | bar(); (unfinished)
[   100] |   /* hello world */
[   100] |   ... lost 3 events
[   100] |   lib_fn();
[   100] | } /* main */
# thread 100 lost 3 events" -- "$DFT" replay -d "$T/basic" --depth=2 --no-time

run_ok "replay -t 150ns --tid 100 -F 'ns::*,bar'" \
	"#     TID  FUNCTION
[   100] | bar();
[   100] | /* hello world */
[   100] | ... lost 3 events
# thread 100 lost 3 events" -- "$DFT" replay -d "$T/basic" -t 150ns --tid 100 -F 'ns::*,bar' --no-time

run_ok "replay --no-demangle -F '_ZN*'" \
	"#     TID  FUNCTION
[   100] | _ZN2ns3Cls6methodEi();
[   100] | /* hello world */
[   100] | ... lost 3 events
# thread 100 lost 3 events" -- "$DFT" replay -d "$T/basic" --no-demangle -F '_ZN*' --no-time

run_ok "report: totals, self times, averages, stddev; library functions named" \
	"  Total time   Self time     Average      Stddev       Calls  Function
  ==========  ==========  ==========  ==========  ==========  ====================
    2.000 us    0.666 us    2.000 us    0.000 us           1  main
    1.334 us    1.054 us    0.667 us    0.802 us           2  foo
    0.180 us    0.180 us    0.090 us    0.127 us           2  bar
    0.100 us    0.100 us    0.100 us    0.000 us           1  lib_fn [libx.so]
    0.100 us    0.100 us    0.100 us    0.000 us           1  ns::Cls::method
# thread 100 lost 3 events" -- "$DFT" report -d "$T/basic"

"$DFT" report -d "$T/basic" -s self | awk 'NR > 2 && !/^#/ { print $NF }' | tr '\n' ' ' >"$T/o"
check $([ "$(cat "$T/o")" = "foo main bar [libx.so] ns::Cls::method " ] && echo 0 || echo 1) \
	"report -s self: sorted by self time"
"$DFT" report -d "$T/basic" -s calls | awk 'NR == 3 { print $NF }' >"$T/o"
check $([ "$(cat "$T/o")" = "bar" ] && echo 0 || echo 1) "report -s calls: most calls first"
head -1 <("$DFT" report -d "$T/basic") | awk '{ exit !($(NF-1) == "Calls" && $NF == "Function") }'
check $? "report: the header's last two columns are the call count and the function name"

# recursion: total time counts the outermost call only
printf 'info tracer: function_graph\nsite 1 0 10 1 main /p\nsite 1 1 20 1 rec /p\nstream 1 1
entry 100 0\nentry 200 1\nentry 300 1\nentry 400 1\nexit 500\nexit 600\nexit 700\nexit 1000\n' |
	"$T/mkstream" "$T/rec"
run_ok "report: recursion counted once in total time" \
	"  Total time   Self time     Average      Stddev       Calls  Function
  ==========  ==========  ==========  ==========  ==========  ====================
    0.900 us    0.400 us    0.900 us    0.000 us           1  main
    0.500 us    0.500 us    0.300 us    0.200 us           3  rec" -- "$DFT" report -d "$T/rec"

"$DFT" info -d "$T/lost" >"$T/o" 2>"$T/e"
rc=$?
grep -q '^#          9        9              7              3          5,122    8.0 KiB$' "$T/o" &&
	grep -q '^#          9       10              0              0              7          -$' "$T/o" &&
	grep -q '^# lost events    : 5,129$' "$T/o" && grep -q '^# threads        : 2$' "$T/o" &&
	grep -q '^# thread 9 lost 5,122 events$' "$T/o"
check $(($? + rc)) "info: per-thread events, calls, losses (threads without a stream too)"
"$DFT" info -d "$T/basic" >"$T/o" 2>"$T/e"
grep -q "^# command        : ./prog a 'b c'$" "$T/o" && grep -q '^# exit status    : process 100 exited with status 0$' "$T/o" &&
	grep -q '^# bytes per call : ' "$T/o" && grep -q '^# size on disk   : ' "$T/o"
check $? "info: command, exit status, size, bytes per call"

# JSON: python3 when there is one, else a bracket/quote balance check
json_ok() {
	if command -v python3 >/dev/null; then
		python3 -m json.tool "$1" >/dev/null 2>&1
	else
		awk 'BEGIN { RS = "\0" } {
			s = $0; gsub(/\\\\/, "", s); gsub(/\\"/, "", s); gsub(/"[^"]*"/, "\"\"", s)
			o = gsub(/[\[{]/, "", s); c = gsub(/[\]}]/, "", s); exit !(o == c && o > 0)
		}' "$1"
	fi
}
for n in basic wrap lost function calls unwind exitlost context; do
	"$DFT" dump --chrome -d "$T/$n" -o "$T/$n.json" 2>"$T/e"
	rc=$?
	json_ok "$T/$n.json"
	check $(($? + rc)) "dump --chrome: valid JSON for $n"
done
grep -q '{"ph":"B","pid":100,"tid":100,"ts":1.000,"name":"main"}' "$T/basic.json" &&
	grep -q '{"ph":"E","pid":100,"tid":101,"ts":1.300,"name":"bar","args":{"unfinished":true}}' "$T/basic.json" &&
	grep -q '{"ph":"B","pid":11,"tid":11,"ts":2.000,"name":"slow"}' "$T/calls.json" &&
	grep -q '{"ph":"E","pid":11,"tid":11,"ts":5.000,"name":"slow"}' "$T/calls.json" &&
	grep -q '"displayTimeUnit":"ns"}' "$T/basic.json"
check $? "dump --chrome: B/E pairs, whole calls (-t) as nested B/E pairs, unfinished marked"
# a context switch ends the slices set aside and begins them again: B and
# E still nest per thread
if command -v python3 >/dev/null; then
	python3 -c '
import json, sys
st = []
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e["ph"] == "B":
        st.append(e["name"])
    elif e["ph"] == "E":
        assert st and st.pop() == e["name"], e
assert not st
' "$T/context.json" &&
		grep -q '"name":"next","args":{"switched":true}' "$T/context.json" &&
		grep -q '"name":"yield","args":{"resumed":true}' "$T/context.json"
	check $? "dump --chrome: slices end at a context switch and begin again, nested per thread"
fi
# names that need escaping
printf 'info tracer: function_graph\nsite 1 0 10 1 we"ird\\\\name /p\nstream 1 1\nentry 10 0\nexit 20\nmarker 30 tab\there\n' |
	"$T/mkstream" "$T/esc"
"$DFT" dump --chrome -d "$T/esc" >"$T/esc.json"
json_ok "$T/esc.json" && grep -q '"name":"we\\"ird\\\\\\\\name"' "$T/esc.json" && grep -q 'tab\\u0009here' "$T/esc.json"
check $? "dump --chrome: quotes, backslashes and control characters escaped"

# ---- damage -------------------------------------------------------------
first_packet="# DURATION     TID     FUNCTION
            [     7] | main() {
   0.100 us [     7] |   a();
   0.090 us [     7] |   b();
   0.010 us [     7] |   a();
   8.191 us [     7] |   b();
   1.000 ms [     7] | } /* main */ (unfinished)"

cp -r "$T/wrap" "$T/trunc"
truncate -s 5000 "$T/trunc/ctf/stream-7-7"
run_damaged "replay: truncated mid-packet" \
	"dynftrace: $T/trunc/ctf/stream-7-7: truncated packet (904 bytes of 4096 are in the file) at offset 4096" \
	"$first_packet" -- "$DFT" replay -d "$T/trunc"

cp -r "$T/wrap" "$T/trunc2"
truncate -s 4150 "$T/trunc2/ctf/stream-7-7"
run_damaged "replay: truncated inside a packet header" \
	"dynftrace: $T/trunc2/ctf/stream-7-7: truncated packet header (54 of 80 bytes) at offset 4096" \
	"$first_packet" -- "$DFT" replay -d "$T/trunc2"

cp -r "$T/wrap" "$T/magic"
printf '\336\255\276\357' | dd of="$T/magic/ctf/stream-7-7" bs=1 seek=4096 conv=notrunc 2>/dev/null
run_damaged "replay: bad packet magic" \
	"dynftrace: $T/magic/ctf/stream-7-7: bad packet magic 0xefbeadde at offset 4096" \
	"$first_packet" -- "$DFT" replay -d "$T/magic"

cp -r "$T/wrap" "$T/uuid"
printf 'X' | dd of="$T/uuid/ctf/stream-7-7" bs=1 seek=4100 conv=notrunc 2>/dev/null
run_damaged "replay: packet uuid differs from the metadata" \
	"dynftrace: $T/uuid/ctf/stream-7-7: packet uuid differs from the metadata's at offset 4100" \
	"$first_packet" -- "$DFT" replay -d "$T/uuid"

cp -r "$T/wrap" "$T/csize"
printf '\377\377' | dd of="$T/csize/ctf/stream-7-7" bs=1 seek=$((4096 + 40)) conv=notrunc 2>/dev/null
run_damaged "replay: content_size larger than packet_size" \
	"dynftrace: $T/csize/ctf/stream-7-7: bad content_size of 65535 bits (packet_size 32768) at offset 4136" \
	"$first_packet" -- "$DFT" replay -d "$T/csize"

head_lines="# DURATION     TID     FUNCTION
            [     7] | main() {
   0.100 us [     7] |   a();
   0.200 us [     7] | } /* main */ (unfinished)"
grep -v '^stream\|^entry\|^exit\|^packet' "$S/wrap.txt" >"$T/base.txt"
# every compact id (0-6) is an event: an extended header with id 200 (none), at 8300 ns
(cat "$T/base.txt"; printf 'stream 7 7\nentry 8000 0\nentry 8100 1\nexit 8200\nraw 07 c8 00 00 00 6c 20 00 00 00 00 00 00\nexit 9000\n') |
	"$T/mkstream" "$T/badid"
run_damaged "replay: unknown event id" \
	"dynftrace: $T/badid/ctf/stream-7-7: unknown event id 200 at offset 94" \
	"$head_lines" -- "$DFT" replay -d "$T/badid"

(cat "$T/base.txt"; printf 'stream 7 7\nentry 8000 0\nentry 8100 1\nexit 8200\nentry 8300 99\nexit 9000\n') |
	"$T/mkstream" "$T/badfn"
run_damaged "replay: function id out of range" \
	"dynftrace: $T/badfn/ctf/stream-7-7: unknown function id 99 at offset 94" \
	"$head_lines" -- "$DFT" replay -d "$T/badfn"
run_damaged "report: function id out of range" \
	"dynftrace: $T/badfn/ctf/stream-7-7: unknown function id 99 at offset 94" - -- \
	"$DFT" report -d "$T/badfn"
run_damaged "info: function id out of range" \
	"dynftrace: $T/badfn/ctf/stream-7-7: unknown function id 99 at offset 94" - -- \
	"$DFT" info -d "$T/badfn"
"$DFT" dump --chrome -d "$T/badfn" >"$T/badfn.json" 2>/dev/null
rc=$?
json_ok "$T/badfn.json"
check $(( $? + (rc != 1) )) "dump --chrome: damage gives valid JSON of what precedes it and status 1"

(cat "$T/base.txt"; printf 'stream 7 7\nentry 8000 0\nraw 07 01 00 00\n') | "$T/mkstream" "$T/shorthdr"
run_damaged "replay: extended header cut by the end of the content" \
	"dynftrace: $T/shorthdr/ctf/stream-7-7: event runs past the packet's content at offset 86" - -- \
	"$DFT" replay -d "$T/shorthdr"

cp -r "$T/wrap" "$T/newer"
printf 'env {\n\ttrace_format_version = 99;\n};\n' >>"$T/newer/ctf/metadata"
run_damaged "replay: a newer event format" \
	"dynftrace: $T/newer/ctf/metadata: event format version 99 is newer than this dynftrace reads (3): read it with the dynftrace that recorded it" - -- \
	"$DFT" replay -d "$T/newer"

cp -r "$T/wrap" "$T/nosites"
rm "$T/nosites/sites-7.txt"
run_damaged "replay: missing sites file" \
	"dynftrace: $T/nosites/ctf/stream-7-7: $T/nosites/sites-7.txt is missing, so its functions cannot be named" - -- \
	"$DFT" replay -d "$T/nosites"

cp -r "$T/wrap" "$T/nometa"
rm "$T/nometa/ctf/metadata"
run_damaged "replay: missing metadata" \
	"dynftrace: $T/nometa/ctf/metadata is missing: the trace is damaged" - -- \
	"$DFT" replay -d "$T/nometa"

# Random damage: flip bytes all over a valid stream; never a crash
crash=0
for i in $(seq 1 60); do
	cp -r "$T/basic" "$T/rnd$i"
	f="$T/rnd$i/ctf/stream-100-100"
	for j in 1 2 3; do
		off=$(( (i * 7919 + j * 104729) % 200 ))
		printf "\\$(printf %o $(( (i * 31 + j * 17) % 256 )))" |
			dd of="$f" bs=1 seek=$off conv=notrunc 2>/dev/null
	done
	for cmd in replay report info "dump --chrome"; do
		"$DFT" $cmd -d "$T/rnd$i" >/dev/null 2>&1
		rc=$?
		[ $rc -gt 1 ] && { crash=1; echo "# $cmd on rnd$i: status $rc"; }
	done
	rm -rf "$T/rnd$i"
done
check $crash "60 randomly damaged streams: replay/report/info/dump end with status 0 or 1"
tap_end
