#!/usr/bin/env bash
# dynftrace against uftrace on the same binary and workload, one run:
# overhead per traced call, slowdown, trace bytes per call, losses; also
# dynftrace's function tracer and flight recorder (--overwrite), and with
# FUNTRACE=DIR (a checkout of github.com/yosefk/funtrace) the same program
# built with funtrace's gcc method (its events stay in memory).
# Usage: bench/vs_uftrace.sh [FIB_N] [LOOPS] [ROUNDS]
set -u
cd "$(dirname "$0")/.."
N=${1:-24}
LOOPS=${2:-2000000}
ROUNDS=${3:-5}
B=${B:-build}
command -v uftrace >/dev/null || { echo "uftrace is not installed (apt-get install uftrace)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gcc -O2 -fpatchable-function-entry=5 bench/callheavy.c -o "$T/prog" || exit 1
if [ -n "${FUNTRACE:-}" ]; then
	{ gcc -O2 -g -pg -mfentry -minstrument-return=call -c bench/callheavy.c -o "$T/progf.o" &&
		g++ -O2 -g -pthread "$T/progf.o" "$FUNTRACE/funtrace.cpp" "$FUNTRACE/funtrace_pg.S" \
			-I"$FUNTRACE" -Wl,--dynamic-list="$FUNTRACE/funtrace.dyn" -ldl -o "$T/progf"; } \
		>"$T/funtrace-build.log" 2>&1 || { echo "funtrace did not build" >&2; FUNTRACE=; }
fi
# calls made: fib(N) calls fib 2*F(N+1)-1 times, each leaf call once per fib leaf, plus LOOPS leaves
calls=$(awk -v n="$N" -v l="$LOOPS" 'BEGIN { a=1; b=1; for (i=2; i<=n+1; i++) { c=a+b; a=b; b=c } fibcalls = 2*a - 1; leaves = (fibcalls + 1) / 2; print fibcalls + leaves + l + 1 }')
# cpu CMD...: CPU ns (user + system) of CMD and the children it waited for:
# the recorder, the program, its threads (the consumer), on a shared
# machine steadier than the wall time.
cpu() {
	local TIMEFORMAT='%3U %3S' t
	t=$( { time "$@" >/dev/null 2>&1; } 2>&1 | tail -1)
	awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.0f\n", (a[1] + a[2]) * 1e9 }'
}
# The tools: NAME, then the command before the program's arguments.
names=(untraced "dynftrace record (function_graph)" "dynftrace record --overwrite (the newest 4 MiB kept)"
	"dynftrace record -T function" "uftrace record -P .")
dirs=("" d o f u)
cmd() { # cmd I ARGS...: tool I on the workload ARGS
	local i=$1
	shift
	case $i in
	0) "$T/prog" "$@" ;;
	1) rm -rf "$T/d.data" && "$B/dynftrace" record -d "$T/d.data" -- "$T/prog" "$@" ;;
	2) rm -rf "$T/o.data" && "$B/dynftrace" record --overwrite -d "$T/o.data" -- "$T/prog" "$@" ;;
	3) rm -rf "$T/f.data" && "$B/dynftrace" record -T function -d "$T/f.data" -- "$T/prog" "$@" ;;
	4) rm -rf "$T/u.data" && uftrace record -P . -d "$T/u.data" "$T/prog" "$@" ;;
	5) (cd "$T" && FUNTRACE_FTRACE_EVENTS_IN_BUF=0 "$T/progf" "$@") ;;
	esac
}
ntools=5
if [ -n "${FUNTRACE:-}" ]; then
	names+=("funtrace (gcc -pg -mfentry -minstrument-return=call, in memory only)")
	ntools=6
fi
declare -A work empty
for r in $(seq "$ROUNDS"); do
	for i in $(seq 0 $((ntools - 1))); do
		empty[$i]+=" $(cpu cmd "$i" 0 0)"
		work[$i]+=" $(cpu cmd "$i" "$N" "$LOOPS")"
	done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "## dynftrace vs uftrace ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "Workload: bench/callheavy.c fib($N) + $LOOPS leaf calls = $calls traced calls, gcc -O2 -fpatchable-function-entry=5; CPU time (user + system, the recorder and the program with its threads), median of $ROUNDS interleaved runs, minus the median of the same tool's runs with no calls (its start-up and exit); ns per call = that / calls, the workload's own work included (the untraced row)."
echo
echo "| tool | CPU ms | start-up ms | ns per call | overhead ns/call | trace bytes | bytes/call |"
echo "|---|---|---|---|---|---|---|"
# shellcheck disable=SC2086
base=$(awk -v w="$(median ${work[0]})" -v e="$(median ${empty[0]})" -v c="$calls" 'BEGIN { print (w - e) / c }')
for i in $(seq 0 $((ntools - 1))); do
	bytes=-
	d=${dirs[$i]:-}
	if [ "$i" = 4 ]; then
		bytes=$(find "$T/u.data" -name '*.dat' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
	elif [ -n "$d" ]; then
		bytes=$(du -sb "$T/$d.data/ctf" | awk '{ print $1 }')
	fi
	# shellcheck disable=SC2086
	awk -v n="${names[$i]}" -v w="$(median ${work[$i]})" -v e="$(median ${empty[$i]})" -v c="$calls" \
		-v b="$bytes" -v base="$base" -v i="$i" 'BEGIN {
		pc = (w - e) / c
		bpc = b == "-" ? "-" : sprintf("%.2f", b / c)
		if (i == 2) bpc = "- (ring only)"
		if (i == 5) { b = 0; bpc = "0 (32 in memory)" }
		printf "| %s | %.1f | %.1f | %.2f | %s | %s | %s |\n", n, w / 1e6, e / 1e6, pc,
			i == 0 ? "-" : sprintf("%.2f", pc - base), b, bpc }'
done
for t in d f; do
	echo
	echo "dynftrace losses ($([ $t = d ] && echo function_graph || echo function)):"
	"$B/dynftrace" info -d "$T/$t.data" 2>/dev/null | grep -i 'lost' | head -3 | sed 's/^/    /'
done
