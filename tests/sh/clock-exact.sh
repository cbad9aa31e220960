#!/usr/bin/env bash
# description: every recorded time lies between the program's own CLOCK_MONOTONIC reads around the call, across silences and the clock's updates
#
# A program calls f() 300 times, each call between two clock_gettime
# (CLOCK_MONOTONIC) reads that it prints, with silences of 0 to 40 ms
# between calls (2.5 s in all: the trace clock's latch, which converts the
# cycle counter to ns, moves some 20 times meanwhile, and the silences
# cross the compact header's 13-bit wrap many times over). The entry and
# the exit of every call, as babeltrace2 reads them, must lie within the
# program's two reads, give or take the counter's distance from
# CLOCK_MONOTONIC (the consumer measures and slews it: well under 2 us,
# where a wrong latch or a compact time read across its wrap is 8 us or
# more off), never decrease, and no call may last longer than its reads
# allow. Recorded with the counter (the graph shortcut) and with
# DYNFTRACE_CLOCK=vdso (ns from the start: exact).
# Env: TOP B CC SAN ARCH.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
cd "$T" || exit 1

if ! command -v babeltrace2 >/dev/null; then
	notok "babeltrace2 is not installed (scripts/deps.sh test installs it)"
	exit 1
fi

cat >ce.c <<'EOF'
#include <stdio.h>
#include <time.h>
#include <unistd.h>
static unsigned long long now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}
__attribute__((noinline)) int f(int x)
{
	__asm__ volatile("");
	return x + 1;
}
int main(void)
{
	static const int gaps[] = {0, 5, 50, 2000, 9000, 40000}; /* us */
	int s = 0;
	for (int i = 0; i < 300; i++) {
		unsigned long long a = now();
		s += f(i);
		unsigned long long b = now();
		printf("%d %llu %llu\n", i, a, b);
		if (gaps[i % 6])
			usleep(gaps[i % 6]);
	}
	return s == 0;
}
EOF
$CC -O2 -fpatchable-function-entry=5 ce.c -o ce || {
	notok "build the test program"
	exit 1
}

# within NAME DIR OUT SLACK: every entry and exit of f in DIR between the
# reads OUT printed around its call, SLACK ns either side.
within() {
	local name=$1 dir=$2 out=$3 slack=$4
	if ! babeltrace2 --clock-cycles "$dir/ctf" >bt.out 2>bt.err || grep -qiE 'error|CRITICAL' bt.err; then
		notok "$name: babeltrace2 reads the trace"
		diag_file bt.err 10
		return
	fi
	sed -nE 's/^\[0*([0-9]+)\].* (entry|exit): .*/\1 \2/p' bt.out >ev.txt
	awk -v slack="$slack" '
		NR == FNR { a[$1] = $2; b[$1] = $3; n++; next }
		{ i = int(k / 2); k++
		  if (!(i in a) || $1 < a[i] - slack || $1 > b[i] + slack) {
			bad++
			if (bad < 4) printf "# call %d: %s at %s, outside [%s, %s]\n", i, $2, $1, a[i], b[i]
		  }
		  if ($1 < prev) { bad++; printf "# call %d: %s at %s, before %s\n", i, $2, $1, prev }
		  if ($2 == "exit" && $1 - prev > b[i] - a[i] + 100) {
			bad++; printf "# call %d: %d ns, its reads %d apart\n", i, $1 - prev, b[i] - a[i]
		  }
		  prev = $1 }
		END { if (k != 2 * n) { printf "# %d events for %d calls\n", k, n; bad++ }
		      exit bad != 0 }' "$out" ev.txt >aw.out
	local rc=$?
	if [ $rc -eq 0 ]; then
		ok "$name: the 600 times of 300 calls lie within the program's clock reads around each (+-$slack ns), in order"
	else
		notok "$name: times outside the program's clock reads"
		diag_file aw.out 8
	fi
}

rm -rf d1
"$DFT" record -d d1 -F f -- ./ce >out1.txt 2>err1.txt || diag_file err1.txt 5
within "counter" d1 out1.txt 2000
rm -rf d2
DYNFTRACE_CLOCK=vdso "$DFT" record -d d2 -F f -- ./ce >out2.txt 2>err2.txt || diag_file err2.txt 5
within "vDSO clock" d2 out2.txt 0
tap_end
