#!/usr/bin/env bash
# description: dump --flame-graph/--svg/--perfetto and graph on synthetic sessions: exact outputs, ranges, threads, damage
# config: asan
#
# Sessions are written by tests/golden/mkstream.c from tests/golden/streams/
# (no runtime involved), plus one with a tracepoint hit. Checks:
#  - folded stacks: self time in ns per call path, threads merged, unwound
#    frames, -t whole calls; --tid and --time-range cut exactly;
#  - graph: the whole graph, FUNC with its backtraces, a glob, --tid, a
#    range; a function never called: exit 1 and one sentence;
#  - --perfetto decoded by protoc with tests/perfetto/perfetto_subset.proto
#    (Perfetto's field numbers): exactly tests/perfetto/basic.expect;
#    tracepoint fields as typed debug annotations; --tid;
#  - --svg: well-formed XML (python3 when there is one), frames and labels;
#  - a function-tracer session has no durations: a clear error, exit 1;
#  - --chrome --tid; usage errors: two formats, a bad range, a range with
#    --perfetto;
#  - damaged streams: the views print what came before the damage, exit 1,
#    one message naming the file and the offset, no crash (also under ASan).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
S=$TOP/tests/golden/streams
PROTO_DIR=$TOP/tests/perfetto

if ! $CC -std=gnu11 -O1 -g $SANFLAGS "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" \
	2>"$T/build.log"; then
	notok "build mkstream"
	diag_file "$T/build.log"
	exit 1
fi
for n in basic calls function unwind; do
	"$T/mkstream" "$T/$n" <"$S/$n.txt" 2>"$T/mk.err" || { notok "mkstream $n"; diag_file "$T/mk.err"; }
done
# A tracepoint hit (mkstream has no tracepoint command: its bytes, FORMAT.md):
# extended header (7, id 9, ts 1001500), tp 0, len 23, fd=-3 "hi" 42 0x1000.
"$T/mkstream" "$T/tp" <<'EOS' 2>"$T/mk.err" || { notok "mkstream tp"; diag_file "$T/mk.err"; }
info command: /t/tp
info tracer: function_graph
info start_ns: 1000000
info pid: 100
site 100 0 401000 32 main /t/tp
site 100 1 401020 16 send /t/tp
stream 100 100
entry 1001000 0
entry 1001100 1
raw 07 09 00 00 00 1C 48 0F 00 00 00 00 00 00 00 17 00 FD FF FF FF 68 69 00 2A 00 00 00 00 00 00 00 00 10 00 00 00 00 00 00
exit 1002000 ext
exit 1003000
EOS
echo "0 msg_sent i:4:fd s:0:buf u:8:len p:8:ctx" >"$T/tp/tracepoints-100.txt"

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

# run_fail NAME STATUS 'STDERR' -- CMD...: that exit status and exactly that one line
run_fail() {
	local name=$1 st=$2 msg=$3
	shift 4
	"$@" >"$T/out" 2>"$T/err"
	local rc=$?
	if [ $rc -ne "$st" ] || [ "$(cat "$T/err")" != "$msg" ]; then
		notok "$name: exit status $rc (want $st)"
		echo "# expected: $msg"
		diag_file "$T/err"
	else
		ok "$name"
	fi
}

# ---- folded stacks ------------------------------------------------------
run_ok "flame-graph: self time per path, threads merged by name" \
	"foo 100
main 666
main;foo 954
main;foo;bar 180
main;foo;ns::Cls::method 100
main;lib_fn 100" -- "$DFT" dump --flame-graph -d "$T/basic"

# main 1001000-1003000, foo 1001100-1002334, bar 1001200-1001380; thread
# 101 left out. The range [1001150, 1001300) in ns since start_ns 1000000.
run_ok "flame-graph --tid --time-range: calls cut to the range" \
	"main 100
main;foo 100
main;foo;bar 100" -- "$DFT" dump --flame-graph -d "$T/basic" --tid 100 -r 0.15us~1.3us

run_ok "flame-graph: open side of a range, the other thread only" \
	"foo 50" -- "$DFT" dump --flame-graph -d "$T/basic" --tid=101 --time-range=1200ns~

run_ok "flame-graph: frames left by exit_depth" \
	"main 300
main;after 100
main;top 100
main;top;jumper 100" -- "$DFT" dump --flame-graph -d "$T/unwind"

run_ok "flame-graph: -t whole calls nest as they ran" \
	"main 23500
main;slow 5500" -- "$DFT" dump --flame-graph -d "$T/calls"

run_fail "flame-graph: a function-tracer session has no durations" 1 \
	"dynftrace: dump: the calls selected have no durations (a function tracer session): no flame graph; record with the function_graph tracer" \
	-- "$DFT" dump --flame-graph -d "$T/function"
run_fail "flame-graph: an empty range" 1 \
	"dynftrace: dump: no calls in the threads and time range selected" \
	-- "$DFT" dump --flame-graph -d "$T/basic" -r 1s~2s

# ---- graph --------------------------------------------------------------
run_ok "graph: every call" \
	"# Function call graph of every call
========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   SELF TIME  FUNCTION
  2.000 us    0.666 us : (1) main
  1.234 us    0.954 us :  +-(1) foo
  0.180 us    0.180 us :  |  +-(1) bar
  0.100 us    0.100 us :  |  +-(1) ns::Cls::method
  0.100 us    0.100 us :  +-(1) lib_fn
  0.100 us    0.100 us : (1) foo
  0.000 us    0.000 us : (1) bar" -- "$DFT" graph -d "$T/basic"

run_ok "graph FUNC: backtraces and the calls below, both threads" \
	"# Function call graph of 'foo'
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   1.234 us
   [0] main
   [1] foo

 backtrace #1: hit 1, time   0.100 us
   [0] foo

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   SELF TIME  FUNCTION
  1.334 us    1.054 us : (2) foo
  0.180 us    0.180 us :  +-(1) bar
  0.100 us    0.100 us :  +-(1) ns::Cls::method" -- "$DFT" graph -d "$T/basic" foo

run_ok "graph: a glob, one thread, a range" \
	"# Function call graph of 'ns::*'
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.050 us
   [0] main
   [1] foo
   [2] ns::Cls::method

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   SELF TIME  FUNCTION
  0.050 us    0.050 us : (1) ns::Cls::method" -- "$DFT" graph -d "$T/basic" --tid 100 -r '~1.45us' 'ns::*'

run_ok "graph: unwound frames" \
	"# Function call graph of 'top'
=============== BACKTRACE ===============
 backtrace #0: hit 1, time   0.200 us
   [0] main
   [1] top

========== FUNCTION CALL GRAPH ==========
# TOTAL TIME   SELF TIME  FUNCTION
  0.200 us    0.100 us : (1) top
  0.100 us    0.100 us :  +-(1) jumper" -- "$DFT" graph -d "$T/unwind" top

run_fail "graph: a function never called" 1 \
	"dynftrace: graph: no call of 'nosuch' in the threads and time range selected" \
	-- "$DFT" graph -d "$T/basic" nosuch

# ---- perfetto -----------------------------------------------------------
if command -v protoc >/dev/null; then
	decode() { protoc --decode=perfetto.protos.Trace --proto_path="$PROTO_DIR" perfetto_subset.proto; }
	"$DFT" dump --perfetto -d "$T/basic" -o "$T/basic.pb" 2>"$T/err"
	rc=$?
	if [ $rc -ne 0 ] || [ -s "$T/err" ]; then
		notok "perfetto: exit status $rc"
		diag_file "$T/err"
	elif ! decode <"$T/basic.pb" >"$T/basic.txt" 2>"$T/err"; then
		notok "perfetto: protoc cannot decode the trace"
		diag_file "$T/err"
	else
		same "perfetto: descriptors, sequences, interned names, slices, instants (protoc)" \
			"$PROTO_DIR/basic.expect" "$T/basic.txt"
	fi
	"$DFT" dump --perfetto -d "$T/tp" | decode >"$T/tp.txt" 2>&1
	tr -d ' \n' <"$T/tp.txt" | grep -q 'debug_annotations{int_value:-3name:"fd"}debug_annotations{string_value:"hi"name:"buf"}debug_annotations{uint_value:42name:"len"}debug_annotations{pointer_value:4096name:"ctx"}type:TYPE_INSTANTname_iid:3}interned_data{event_names{iid:3name:"msg_sent"}}'
	check $? "perfetto: tracepoint fields as typed debug annotations"
	"$DFT" dump --perfetto -d "$T/basic" --tid 101 | decode >"$T/tid.txt" 2>&1
	[ "$(grep -c 'tid:' "$T/tid.txt")" -eq 1 ] && grep -q 'tid: 101' "$T/tid.txt" &&
		[ "$(grep -c 'TYPE_SLICE_BEGIN' "$T/tid.txt")" -eq 2 ]
	check $? "perfetto --tid: one thread's descriptor and slices"
	"$DFT" dump --perfetto -d "$T/function" | decode | tr -d ' \n' | sed 's/packet{/\n&/g' >"$T/fn.txt"
	grep -q 'timestamp:2000trusted_packet_sequence_id:1track_event{debug_annotations{string_value:"main"name:"caller"}type:TYPE_INSTANTname_iid:2}interned_data{event_names{iid:2name:"foo"}}' "$T/fn.txt" &&
		grep -q 'timestamp:3000trusted_packet_sequence_id:1track_event{debug_annotations{string_value:"0x401030\[flat\]"name:"caller"}type:TYPE_INSTANTname_iid:2}sequence_flags:2}' "$T/fn.txt"
	check $? "perfetto: function-tracer calls are instants with their caller, names interned once"
	"$DFT" dump --perfetto -d "$T/calls" | decode | grep -E 'timestamp|TYPE' | tr -d ' ' | paste -sd' ' >"$T/calls.txt"
	[ "$(cat "$T/calls.txt")" = "timestamp:1000 type:TYPE_SLICE_BEGIN timestamp:2000 type:TYPE_SLICE_BEGIN timestamp:5000 type:TYPE_SLICE_END timestamp:17500 type:TYPE_SLICE_BEGIN timestamp:20000 type:TYPE_SLICE_END timestamp:30000 type:TYPE_SLICE_END" ]
	check $? "perfetto: -t whole calls are slices from their start to their end, nested"
	b=$(grep -c TYPE_SLICE_BEGIN "$T/basic.txt")
	e=$(grep -c TYPE_SLICE_END "$T/basic.txt")
	[ "$b" -eq 7 ] && [ "$e" -eq 7 ]
	check $? "perfetto: every slice begun is ended ($b begin, $e end)"
else
	skip "protoc is not installed (Debian package protobuf-compiler, scripts/deps.sh test)"
fi

# ---- svg ----------------------------------------------------------------
"$DFT" dump --svg -d "$T/basic" -o "$T/basic.svg" 2>"$T/err"
check $? "svg: written"
if command -v python3 >/dev/null; then
	python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$T/basic.svg" 2>"$T/err"
	check $? "svg: well-formed XML"
	diag_file "$T/err"
fi
[ "$(grep -c '^<g><title>' "$T/basic.svg")" -eq 7 ] &&
	grep -q '<title>ns::Cls::method$' "$T/basic.svg" &&
	grep -q '>ns::..</text>' "$T/basic.svg" &&
	grep -q '^2.000 us (95.24%), self 0.666 us, 1 call</title>' "$T/basic.svg"
check $? "svg: a frame per path with its time, share and calls; labels cut to fit"

# Names with XML's special characters, folded stacks' separator, a quote
# and bytes that are not UTF-8.
printf 'info command: ./w<e>ird\ninfo tracer: function_graph\ninfo start_ns: 0\ninfo pid: 7\nsite 7 0 1000 16 main /t/w\nsite 7 1 1010 16 tmpl<int,&x>;\377\376"q /t/w\nstream 7 7\nentry 100 0\nentry 200 1\nexit 300\nexit 400\n' |
	"$T/mkstream" "$T/weird" 2>"$T/mk.err" || { notok "mkstream weird"; diag_file "$T/mk.err"; }
run_ok "flame-graph: odd names: ';' as ':', bytes that are not UTF-8 as \\xNN" \
	'main 200
main;tmpl<int,&x>:\xff\xfe"q 100' -- "$DFT" dump --flame-graph -d "$T/weird"
"$DFT" dump --svg -d "$T/weird" -o "$T/weird.svg" &&
	grep -qF '<title>tmpl&lt;int,&amp;x&gt;;\xff\xfe&quot;q' "$T/weird.svg" &&
	{ ! command -v python3 >/dev/null ||
		python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' "$T/weird.svg"; }
check $? "svg: odd names escaped, the file well-formed"
if command -v protoc >/dev/null; then
	"$DFT" dump --perfetto -d "$T/weird" | decode | grep -qF 'name: "tmpl<int,&x>;\\xff\\xfe\"q"'
	check $? "perfetto: odd names as valid UTF-8"
fi

# ---- usage errors -------------------------------------------------------
run_fail "dump: two formats" 2 "dynftrace: dump: give one output format, not --svg and --perfetto" \
	-- "$DFT" dump --svg --perfetto -d "$T/basic"
run_fail "dump: a bad time range" 2 \
	"dynftrace: dump: bad time range '2ms~1ms': give FROM~TO, FROM~ or ~TO, times since the start with ns, us, ms or s, FROM before TO" \
	-- "$DFT" dump --svg -r 2ms~1ms -d "$T/basic"
"$DFT" dump --chrome --tid 101 -d "$T/basic" >"$T/out" 2>"$T/err"
[ $? -eq 0 ] && ! grep -q '"tid":100,"ts"' "$T/out" && [ "$(grep -c '"tid":101,"ts"' "$T/out")" -eq 4 ] &&
	grep -q '"name":"process_name"' "$T/out"
check $? "dump --chrome --tid: one thread's events and its process's name"
run_fail "dump: --time-range with --perfetto" 2 "dynftrace: dump: --time-range works with --flame-graph and --svg" \
	-- "$DFT" dump --perfetto -r 1ms~ -d "$T/basic"
run_fail "graph: two functions" 2 "dynftrace: graph: give one function (a glob matches several: 'foo*'); see 'dynftrace graph --help'" \
	-- "$DFT" graph foo bar -d "$T/basic"

# ---- damage -------------------------------------------------------------
# The first thread's stream cut in the middle of its first packet: the
# other thread still shows, one message names the file and the offset, exit
# status 1.
cp -r "$T/basic" "$T/cut"
truncate -s 100 "$T/cut/ctf/stream-100-100"
msg="dynftrace: $T/cut/ctf/stream-100-100: truncated packet (100 bytes of 4096 are in the file) at offset 0"
for v in "dump --flame-graph" "dump --svg" "dump --perfetto" "graph" "graph foo"; do
	# shellcheck disable=SC2086
	"$DFT" $v -d "$T/cut" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 1 ] || [ "$(cat "$T/err")" != "$msg" ] || ! grep -q foo "$T/out"; then
		notok "damaged stream: $v: exit status $rc"
		diag_file "$T/err"
	else
		ok "damaged stream: $v: the rest shown, one message, exit 1"
	fi
done
# Bytes past a valid packet that are not a packet, in every view.
cp -r "$T/basic" "$T/junk"
head -c 200 /dev/urandom >>"$T/junk/ctf/stream-100-101"
for v in "dump --flame-graph" "dump --svg" "dump --perfetto" "graph"; do
	# shellcheck disable=SC2086
	"$DFT" $v -d "$T/junk" >"$T/out" 2>"$T/err"
	rc=$?
	if [ $rc -ne 1 ] || [ "$(wc -l <"$T/err")" -ne 1 ] || ! grep -q 'stream-100-101' "$T/err"; then
		notok "trailing garbage: $v: exit status $rc"
		diag_file "$T/err"
	else
		ok "trailing garbage: $v: one message, exit 1"
	fi
done

tap_end
