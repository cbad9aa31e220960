#!/usr/bin/env bash
# description: dump --ctf writes a CTF trace whose site ids babeltrace2 shows as function names (enumerations), per table of names, names escaped; damage, refusals, the metadata's size for a large session
# config: asan
#
# Sessions written by tests/golden/mkstream.c (no runtime):
#  - three processes: 100 and 200 with the same names (one stream class),
#    300 with others (a second class, its streams' packet headers say so);
#    names holding '"', '\', '<', '>', UTF-8, a byte that is not UTF-8 and
#    a C++ user-defined literal (operator"" _km); entries of both forms
#    (16-bit ids, and a 32-bit one for id 70000), a -t call, an entry with
#    arguments: babeltrace2 prints every func as ( "NAME" : container = ID )
#    with the name replay shows (the bad byte as the text \xff), every
#    event of the session, and the arguments still typed;
#  - a damaged stream: what precedes the damage is written and readable,
#    status 1 and one sentence; no -o, a directory holding a trace already:
#    a sentence, nothing overwritten;
#  - 30000 sites in 10 processes of one table and 2 of others, one of
#    them calling 3000 functions: the metadata holds the called names of
#    each table once per container (under 400 kB), babeltrace2 reads it
#    (its metadata parser takes time quadratic in an enumeration's labels:
#    docs/CLI.md).
# Then a function-tracer session recorded from a program (function_near
# events, 22-bit ids): named too (default and asan configurations).
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace

if ! command -v babeltrace2 >/dev/null; then
	notok "babeltrace2 is not installed (scripts/deps.sh test installs it)"
	exit 1
fi
if ! $CC -std=gnu11 -O1 -g $SANFLAGS "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" \
	2>"$T/build.log"; then
	notok "build mkstream"
	diag_file "$T/build.log"
	exit 1
fi
{
	printf 'info command: ./prog\ninfo tracer: function_graph\ninfo start_ns: 1000000\n'
	printf 'info pid: 100\ninfo pid: 200\ninfo pid: 300\ninfo exit: 100 status 0\n'
	for p in 100 200; do
		printf 'site %s 0 401000 32 main /t/prog\n' $p
		printf 'site %s 1 401020 16 say"hi" /t/prog\n' $p
		printf 'site %s 2 401030 16 back\\slash /t/prog\n' $p
		printf 'site %s 3 401040 16 _Zli3_kmy /t/prog\n' $p
		printf 'site %s 4 401050 16 caf\xc3\xa9<x> /t/prog\n' $p
		printf 'site %s 5 401060 16 bad\xffbyte /t/prog\n' $p
		printf 'site %s 70000 401070 16 far /t/prog\n' $p
		printf 'map %s 401000 402000 0 /t/prog\n' $p
	done
	printf 'site 300 0 501000 32 other_main /t/other\nsite 300 1 501020 16 other_leaf /t/other\n'
	printf 'map 300 501000 502000 0 /t/other\n'
	for p in 100 200; do
		printf 'stream %s %s\n' $p $p
		printf 'entry16 %s001000 0\nentry16 %s001100 1\nexit %s001200\n' $p $p $p
		printf 'entry16 %s001300 2\nexit %s001400\nentry16 %s001500 3\nexit %s001600\n' $p $p $p $p
		printf 'entry16 %s001700 4\nexit %s001800\nentry16 %s001900 5\nexit %s002000\n' $p $p $p $p
		printf 'entry %s002100 70000\nexit %s002200\ncall %s002400 1 100\n' $p $p $p
		printf 'entry_args %s002500 4 01 06 01 fd ff ff ff\nexit %s002600\n' $p $p
		printf 'exit %s003000\n' $p
	done
	printf 'stream 300 300\nentry16 300001000 0\nentry16 300001100 1\nexit 300001200\nexit 300001300\n'
} >"$T/s.txt"
"$T/mkstream" "$T/a" <"$T/s.txt" 2>"$T/mk.err" || { notok "mkstream"; diag_file "$T/mk.err"; exit 1; }

"$DFT" dump --ctf -d "$T/a" -o "$T/c" 2>"$T/err"
check $? "dump --ctf exits 0"
babeltrace2 "$T/c" >"$T/bt" 2>"$T/bt.err"
check $? "babeltrace2 reads the written trace"
# "PID NAME ID" for every func field babeltrace2 prints
sed -nE 's/.*\{ pid = ([0-9]+), tid = [0-9]+ \}, \{ func = \( "((\\.|[^"\\])*)" : container = ([0-9]+) \).*/\1 \2 \4/p' "$T/bt" | sort -u >"$T/names"
cat >"$T/exp" <<'X'
100 back\\slash 2
100 bad\\xffbyte 5
100 café<x> 4
100 far 70000
100 main 0
100 operator\"\" _km 3
100 say\"hi\" 1
200 back\\slash 2
200 bad\\xffbyte 5
200 café<x> 4
200 far 70000
200 main 0
200 operator\"\" _km 3
200 say\"hi\" 1
300 other_leaf 1
300 other_main 0
X
sort -o "$T/exp" "$T/exp"
if diff -u "$T/exp" "$T/names" >"$T/diff"; then
	ok "babeltrace2: every func named, each process by its own table, names escaped"
else
	notok "babeltrace2: every func named, each process by its own table, names escaped"
	diag_file "$T/diff" 40
	diag_file "$T/bt.err"
fi
n_orig=$(babeltrace2 "$T/a/ctf" 2>/dev/null | wc -l)
n_new=$(wc -l <"$T/bt")
nf=$(grep -c 'func = (' "$T/bt")
if [ "$n_orig" -eq "$n_new" ] && [ "$nf" -eq 20 ]; then
	ok "babeltrace2: the same $n_new events as the session's own trace, $nf of them named"
else
	notok "babeltrace2: $n_new events ($n_orig in the session's trace), $nf named (want 20)"
fi
if grep -q 'entry_args: .*func = ( "café<x>" : container = 4 ).*kind = ( "i32"' "$T/bt" &&
	grep -q 'call: .*func = ( "say\\"hi\\"" : container = 1 ), duration_ns = 100' "$T/bt"; then
	ok "babeltrace2: arguments still typed, a -t call named"
else
	notok "babeltrace2: arguments still typed, a -t call named"
	grep -E 'entry_args|call:' "$T/bt" | diag_file /dev/stdin
fi
nclass=$(grep -c '^stream {' "$T/c/metadata")
if [ "$nclass" -eq 2 ]; then ok "two stream classes for two tables of names"; else notok "$nclass stream classes (want 2)"; fi

"$DFT" dump --ctf -d "$T/a" -o "$T/c" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 1 ] && grep -q "holds a CTF trace already" "$T/err"; then
	ok "a directory holding a trace: status 1, a sentence"
else
	notok "a directory holding a trace: status $rc"
	diag_file "$T/err"
fi
"$DFT" dump --ctf -d "$T/a" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && grep -q -- "-o DIR" "$T/err"; then ok "no -o: status 2, a sentence"; else notok "no -o: status $rc"; diag_file "$T/err"; fi
"$DFT" dump --ctf -d "$T/a" -o "$T/t" --tid 300 2>"$T/err"
check $? "dump --ctf --tid 300 exits 0"
if [ "$(ls "$T/t")" = "$(printf 'metadata\nstream-300-300')" ] && [ "$(grep -c '^stream {' "$T/t/metadata")" -eq 1 ] &&
	[ "$(babeltrace2 "$T/t" 2>&1 | grep -c 'other_')" -eq 2 ]; then
	ok "--tid: that thread's stream and its class only"
else
	notok "--tid: that thread's stream and its class only"
	ls "$T/t" | diag_file /dev/stdin
fi

# damage: the second packet of a stream cut short
{
	printf 'info command: ./prog\ninfo tracer: function_graph\ninfo start_ns: 1000000\ninfo pid: 100\n'
	printf 'site 100 0 401000 32 main /t/prog\nmap 100 401000 402000 0 /t/prog\n'
	printf 'stream 100 100\nentry16 1001000 0\nexit 1001100\npacket\nentry16 1002000 0\nexit 1002100\n'
} | "$T/mkstream" "$T/dm" 2>"$T/mk.err" || { notok "mkstream damaged"; diag_file "$T/mk.err"; exit 1; }
f="$T/dm/ctf/stream-100-100"
truncate -s $(($(stat -c %s "$f") - 10)) "$f"
"$DFT" dump --ctf -d "$T/dm" -o "$T/dmo" >/dev/null 2>"$T/err"
rc=$?
nb=$(babeltrace2 "$T/dmo" 2>/dev/null | grep -c '"main"')
if [ $rc -eq 1 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "stream-100-100: .* at offset" "$T/err" && [ "$nb" -eq 1 ]; then
	ok "a damaged stream: status 1, one sentence, the packet before the damage readable"
else
	notok "a damaged stream: status $rc, $nb named entries read back"
	diag_file "$T/err"
fi

# a large session: 30000 sites in 12 processes, 10 of one table (one
# calling 3000 functions, the others one) and 2 of tables of their own
awk 'BEGIN {
	print "info command: ./big"; print "info tracer: function_graph"; print "info start_ns: 1000000"
	for (p = 1; p <= 12; p++) {
		print "info pid: " p
		for (i = 0; i < 30000; i++)
			printf "site %d %d %x 16 %s_function_number_%d /t/big\n", p, i, 4198400 + 16 * i, (p > 10 ? "proc" p : "some_module"), i
		print "map " p " 401000 600000 0 /t/big"
	}
	for (p = 1; p <= 12; p++) {
		print "stream " p " " p
		for (i = (p == 1 ? 9 : 29999); i < 30000; i += 10) {
			print "entry16 " p "00" (1000 + i * 20) " " i; print "exit " p "00" (1010 + i * 20)
		}
	}
}' >"$T/big.txt"
"$T/mkstream" "$T/big" <"$T/big.txt" 2>"$T/mk.err" || { notok "mkstream big"; diag_file "$T/mk.err"; exit 1; }
"$DFT" dump --ctf -d "$T/big" -o "$T/bigc" 2>"$T/err"
rc=$?
size=$(stat -c %s "$T/bigc/metadata" 2>/dev/null || echo 0)
babeltrace2 "$T/bigc" >"$T/bigbt" 2>"$T/bt.err"
nb=$(grep -cE 'func = \( "(some_module|proc1[12])_function_number_[0-9]+" : container = [0-9]+ \)' "$T/bigbt")
# each table's called names twice (32 and 16 bits): about 2 x 3000 x 46 bytes
if [ $rc -eq 0 ] && [ "$nb" -eq 3011 ] && [ "$size" -lt 400000 ]; then
	ok "12 processes x 30000 sites, 3 tables: metadata $size bytes, babeltrace2 names all $nb entries"
else
	notok "12 processes x 30000 sites: status $rc, metadata $size bytes, $nb entries named (want 3011)"
	diag_file "$T/err"
	diag_file "$T/bt.err"
fi

# recorded: the function tracer's function_near events (22-bit ids)
if [ -n "$SAN" ] && [ "$SAN" != asan ]; then
	skip "recording runs in the default and asan configurations only"
else
	record_setup
	record_san
	cat >prog.c <<'X'
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + 2; }
int main(int argc, char **argv) { (void)argv; return mid(argc) == 6 ? 0 : 1; }
X
	cc_recorded prog prog.c
	recorded d -T function ./prog
	"$DFT" dump --ctf -d d -o dc 2>err
	r=$?
	babeltrace2 dc >bt 2>bt.err
	if [ $r -eq 0 ] && grep -q 'function_near: .*func = ( "leaf" : container = [0-9]* )' bt &&
		grep -q 'function_near: .*func = ( "mid" : container = [0-9]* )' bt; then
		ok "a recorded -T function session: function_near's 22-bit ids named"
	else
		notok "a recorded -T function session: status $r"
		diag_file bt
		diag_file err
	fi
fi
tap_end
