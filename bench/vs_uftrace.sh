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
now() { date +%s%N; }
run() { # prints ns
	local t0 t1
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	echo $((t1 - t0))
}
declare -a plain dyn uft dfn dow ftr
for r in $(seq "$ROUNDS"); do
	plain+=("$(run "$T/prog" "$N" "$LOOPS")")
	rm -rf "$T/d.data"
	dyn+=("$(run "$B/dynftrace" record -d "$T/d.data" -- "$T/prog" "$N" "$LOOPS")")
	rm -rf "$T/f.data"
	dfn+=("$(run "$B/dynftrace" record -T function -d "$T/f.data" -- "$T/prog" "$N" "$LOOPS")")
	rm -rf "$T/o.data"
	dow+=("$(run "$B/dynftrace" record --overwrite -d "$T/o.data" -- "$T/prog" "$N" "$LOOPS")")
	rm -rf "$T/u.data"
	uft+=("$(run uftrace record -P . -d "$T/u.data" "$T/prog" "$N" "$LOOPS")")
	if [ -n "${FUNTRACE:-}" ]; then
		ftr+=("$(cd "$T" && run env FUNTRACE_FTRACE_EVENTS_IN_BUF=0 "$T/progf" "$N" "$LOOPS")")
	fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
mp=$(median "${plain[@]}")
md=$(median "${dyn[@]}")
mu=$(median "${uft[@]}")
mf=$(median "${dfn[@]}")
mo=$(median "${dow[@]}")
dbytes=$(du -sb "$T/d.data/ctf" | awk '{ print $1 }')
fbytes=$(du -sb "$T/f.data/ctf" | awk '{ print $1 }')
obytes=$(du -sb "$T/o.data/ctf" | awk '{ print $1 }')
ubytes=$(find "$T/u.data" -name '*.dat' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
lost=$("$B/dynftrace" info -d "$T/d.data" 2>/dev/null | grep -i 'lost' | head -3)
flost=$("$B/dynftrace" info -d "$T/f.data" 2>/dev/null | grep -i 'lost' | head -3)
echo "## dynftrace vs uftrace ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "Workload: bench/callheavy.c fib($N) + $LOOPS leaf calls = $calls traced calls, gcc -O2 -fpatchable-function-entry=5; median of $ROUNDS interleaved runs, whole-process wall time."
echo
echo "| tool | wall ms | overhead ns/call | slowdown | trace bytes | bytes/call |"
echo "|---|---|---|---|---|---|"
awk -v p="$mp" -v c="$calls" 'BEGIN { printf "| untraced | %.1f | - | 1.00 | - | - |\n", p / 1e6 }'
awk -v p="$mp" -v t="$md" -v c="$calls" -v b="$dbytes" 'BEGIN { printf "| dynftrace record (function_graph) | %.1f | %.1f | %.2f | %d | %.2f |\n", t / 1e6, (t - p) / c, t / p, b, b / c }'
awk -v p="$mp" -v t="$mo" -v c="$calls" -v b="$obytes" 'BEGIN { printf "| dynftrace record --overwrite (the newest 4 MiB kept) | %.1f | %.1f | %.2f | %d | - |\n", t / 1e6, (t - p) / c, t / p, b }'
awk -v p="$mp" -v t="$mf" -v c="$calls" -v b="$fbytes" 'BEGIN { printf "| dynftrace record -T function | %.1f | %.1f | %.2f | %d | %.2f |\n", t / 1e6, (t - p) / c, t / p, b, b / c }'
if [ -n "${FUNTRACE:-}" ]; then
	awk -v p="$mp" -v t="$(median "${ftr[@]}")" -v c="$calls" 'BEGIN { printf "| funtrace (gcc -pg, in memory only) | %.1f | %.1f | %.2f | 0 | 0 (32 in memory) |\n", t / 1e6, (t - p) / c, t / p }'
fi
awk -v p="$mp" -v t="$mu" -v c="$calls" -v b="$ubytes" 'BEGIN { printf "| uftrace record -P . | %.1f | %.1f | %.2f | %d | %.2f |\n", t / 1e6, (t - p) / c, t / p, b, b / c }'
awk -v d="$md" -v u="$mu" -v p="$mp" 'BEGIN { printf "\nuftrace overhead / dynftrace overhead: %.1fx\n", (u - p) / (d - p) }'
echo
echo "dynftrace losses (function_graph): ${lost:-none reported}"
echo
echo "dynftrace losses (function): ${flost:-none reported}"
