#!/usr/bin/env bash
# description: replay's memory does not grow with the session: a session 500 times larger costs a few MiB at most
# config: asan
#
# replay reads each stream with two cursors over its mapping (cli/cmd_replay.c)
# and keeps only call stacks and the calls decided but not printed yet; the
# stream decoder gives back the mapped pages it has passed. Two sessions
# written by tests/golden/mkstream.c, the same shape (main calling foo
# calling bar, in two threads) with 2,000 and 1,000,000 calls of foo (51 KB
# and 20 MB of streams), are replayed under tests/progs/maxrss.c (the peak
# resident set from wait4), with no option, -t (the look-ahead waits for
# calls to last long enough) and -D 1 (thread 12's main is a leaf: the
# look-ahead runs through its whole stream before main prints). The larger session may cost
# at most 6 MiB more (ASan: 12 MiB); replay held 20 MiB of anonymous memory
# and 20 MiB of mapped file for it before. The outputs are checked too.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
LIMIT=6144
[ -n "$SAN" ] && LIMIT=12288

if ! $CC -std=gnu11 -O1 -g "$TOP/tests/golden/mkstream.c" -o "$T/mkstream" 2>"$T/build.log" ||
	! $CC -std=gnu11 -O1 -g "$TOP/tests/progs/maxrss.c" -o "$T/maxrss" 2>>"$T/build.log"; then
	notok "build mkstream and maxrss"
	diag_file "$T/build.log"
	exit 1
fi

# gen N: the session script, N calls of foo in thread 12, N/4 in thread 13
# with a marker every 10,000
gen() {
	awk -v n="$1" 'BEGIN {
		print "info command: ./big"
		print "info tracer: function_graph"
		print "info start_ns: 0"
		print "info pid: 12"
		print "site 12 0 1000 16 main /t/big"
		print "site 12 1 1010 16 foo /t/big"
		print "site 12 2 1020 16 bar /t/big"
		for (s = 0; s < 2; s++) {
			m = s ? int(n / 4) : n
			ts = 1000 + s * 7
			print "stream 12 " 12 + s
			print "entry " ts " 0"
			for (i = 0; i < m; i++) {
				printf "entry %d 1\nentry %d 2\nexit %d\nexit %d\n", ts + 10, ts + 20, ts + 30, ts + 40
				ts += 40
				if (s && i % 10000 == 0)
					print "marker " ts " step " i
			}
			print "exit " ts + 10
		}
	}'
}
for n in 2000 1000000; do
	if ! gen $n | "$T/mkstream" "$T/s$n" 2>"$T/mk.err"; then
		notok "mkstream of $n calls"
		diag_file "$T/mk.err"
		exit 1
	fi
done

# rss N OPTIONS...: the peak RSS (KiB) of replay on session N; the output
# goes to $T/out-N, the status to $T/rc
rss() {
	local n=$1
	shift
	"$T/maxrss" "$DFT" replay -d "$T/s$n" "$@" >"$T/out-$n" 2>"$T/err-$n"
	echo $? >"$T/rc"
	awk '$1 == "maxrss" { print $2 }' "$T/err-$n"
}

for opts in "" "-t 1us" "-D 1"; do
	name="replay${opts:+ $opts}"
	small=$(rss 2000 $opts)
	rc_small=$(cat "$T/rc")
	big=$(rss 1000000 $opts)
	rc_big=$(cat "$T/rc")
	if [ "$rc_small" != 0 ] || [ "$rc_big" != 0 ] || [ -z "$small" ] || [ -z "$big" ]; then
		notok "$name: exit status $rc_small and $rc_big"
		diag_file "$T/err-2000"
		diag_file "$T/err-1000000"
		continue
	fi
	# what it printed: every foo; or (-t: foo and bar last 40 and 20 ns;
	# -D 1) thread 12's main as a leaf, thread 13's with its markers
	if [ -z "$opts" ]; then
		got=$(grep -c '\[    12\] |   foo() {$' "$T/out-1000000")
		want=1000000
	else
		got="$(grep -c foo "$T/out-1000000") $(grep -c '\[    12\] | main();$' "$T/out-1000000")"
		got="$got $(grep -c '\[    13\] |   /\* step' "$T/out-1000000")"
		want="0 1 25"
	fi
	if [ "$got" != "$want" ]; then
		notok "$name: the output of 1,000,000 calls has $got lines, not $want"
		diag_file "$T/out-1000000" 10
		continue
	fi
	if [ $((big - small)) -le $LIMIT ]; then
		ok "$name: peak RSS $small KiB for 2,000 calls, $big KiB for 1,000,000 (limit +$LIMIT KiB)"
	else
		notok "$name: peak RSS $small KiB for 2,000 calls, $big KiB for 1,000,000 (limit +$LIMIT KiB)"
		diag_file "$T/err-1000000"
	fi
done
tap_end
