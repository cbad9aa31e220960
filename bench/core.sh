#!/usr/bin/env bash
# core.sh - figures for the core runtime (bench/core_bench.c; method in
# docs/PERFORMANCE.md, "Core runtime"). Prints markdown tables.
#   per-call cost of a small function: site NOP, one ops, two ops, two ops
#     of which one wants it (ns, median (min-max) of REPS rounds);
#   disabled sites against an uninstrumented build: a loop and fib(32),
#     and callgrind's instruction counts (when valgrind is installed);
#   enabling and disabling 100,000 sites (compiled in: the generator's
#     assembly) and 100,000 relocated entries (the same functions in C,
#     built without sites, patched with DYNFTRACE_PATCH): wall time of the
#     API call, the patch batch alone, and a check that each operation was
#     one batch of 3 syncs (relocated entries: 1, no breakpoint); idle and
#     with a thread calling them all.
# Usage: bench/core.sh [REPS [BIG_REPS]]   (defaults 11 and 7)
set -u
cd "$(dirname "$0")/.."
REPS=${1:-11}
BIG=${2:-7}
B=${B:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CFL="-std=gnu11 -O2 -D_GNU_SOURCE -Iinclude"
LNK="-L$B -Wl,-rpath,$PWD/$B -ldynftrace -lpthread"
gcc $CFL -fpatchable-function-entry=5 -DPFX=inst_ -c bench/core_work.c -o "$T/inst.o" &&
	gcc $CFL -DPFX=plain_ -c bench/core_work.c -o "$T/plain.o" &&
	gcc $CFL -c bench/core_bench.c -o "$T/cb.o" &&
	gcc "$T/cb.o" "$T/inst.o" "$T/plain.o" -o "$T/cb" $LNK || exit 1
bash tests/gen/genfuncs.sh -S 100000 >"$T/gen.s" &&
	gcc -c "$T/gen.s" -o "$T/gen.o" &&
	gcc "$T/cb.o" "$T/inst.o" "$T/plain.o" "$T/gen.o" -o "$T/cb-big" $LNK || exit 1
# The same 100,000 functions without sites (C, -O1: -O2 takes minutes).
bash tests/gen/genfuncs.sh 100000 >"$T/genp.c" &&
	gcc -std=gnu11 -O1 -c "$T/genp.c" -o "$T/genp.o" &&
	gcc "$T/cb.o" "$T/inst.o" "$T/plain.o" "$T/genp.o" -o "$T/cb-reloc" $LNK || exit 1

# val KEY FILE: "median (min-max)" of KEY's line
val() { awk -v k="$1" '$1 == k { printf "%s (%s-%s)", $2, $3, $4 }' "$2"; }
med() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

echo "## Core runtime ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
echo
"$T/cb" calls "$REPS" 10000000 >"$T/calls"
echo "Cost per call of a small function (ns, median (min-max) of $REPS):"
echo
echo "| inst_leaf() call | ns per call | added by tracing |"
echo "|---|---|---|"
nop=$(med call_nop "$T/calls")
for k in "call_nop:site is a NOP (not traced)" "call_one_ops:one ops (trampoline calls its func directly)" \
	"call_two_ops:two ops, both want it (list function)" "call_two_ops_one_wants:two ops, one wants it (list function)"; do
	key=${k%%:*}
	add=$(awk -v a="$(med "$key" "$T/calls")" -v b="$nop" 'BEGIN { printf "%+.2f", a - b }')
	[ "$key" = call_nop ] && add=-
	echo "| ${k#*:} | $(val "$key" "$T/calls") | $add |"
done
echo
"$T/cb" disabled "$REPS" 10000000 32 >"$T/dis"
echo "Disabled sites against an uninstrumented build of the same code:"
echo
echo "| workload | sites compiled in, disabled | no sites | ratio |"
echo "|---|---|---|---|"
r1=$(awk -v a="$(med loop_disabled_sites "$T/dis")" -v b="$(med loop_no_sites "$T/dis")" 'BEGIN { printf "%.2f", a / b }')
r2=$(awk -v a="$(med fib_disabled_sites_ms "$T/dis")" -v b="$(med fib_no_sites_ms "$T/dis")" 'BEGIN { printf "%.2f", a / b }')
echo "| 10,000,000 calls of leaf(), ns per call | $(val loop_disabled_sites "$T/dis") | $(val loop_no_sites "$T/dis") | $r1 |"
echo "| recursive fib(32), ms | $(val fib_disabled_sites_ms "$T/dis") | $(val fib_no_sites_ms "$T/dis") | $r2 |"
echo
if command -v valgrind >/dev/null; then
	cg() {
		valgrind --tool=callgrind --toggle-collect="run_$1" --callgrind-out-file=/dev/null \
			"$T/cb" "cg-$1" 1000000 25 2>&1 | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
	}
	ci=$(cg inst) cp=$(cg plain)
	echo "| callgrind, 1,242,786 calls | instructions | per call |"
	echo "|---|---|---|"
	awk -v i="$ci" -v p="$cp" 'BEGIN {
		printf "| sites compiled in, disabled | %d | %.3f |\n", i, i / 1242786
		printf "| no sites | %d | %.3f |\n", p, p / 1242786
		printf "| difference | %d | %.3f |\n", i - p, (i - p) / 1242786 }'
	echo
fi
big_table() {
	local f=$1 what=$2
	echo "Enabling and disabling 100,000 $what (ms, median (min-max) of $BIG; $(med big_sites "$f") sites per batch; operations that were not exactly 1 batch of $3 sync(s): $(med big_ops_not_3_syncs "$f")):"
	echo
	echo "| operation | whole API call | patch batch |"
	echo "|---|---|---|"
	echo "| enable, idle | $(val enable_api_ms "$f") | $(val enable_batch_ms "$f") |"
	echo "| disable, idle | $(val disable_api_ms "$f") | $(val disable_batch_ms "$f") |"
	echo "| enable, one thread calling them | $(val enable_api_busy_ms "$f") | $(val enable_batch_busy_ms "$f") |"
	echo "| disable, one thread calling them | $(val disable_api_busy_ms "$f") | $(val disable_batch_busy_ms "$f") |"
	echo
}
"$T/cb-big" big "$BIG" >"$T/big" || exit 1
big_table "$T/big" "compiled-in sites" 3
t0=$(date +%s%N)
DYNFTRACE_PATCH='[fgh]_[0-9]*' "$T/cb-reloc" big "$BIG" >"$T/reloc" || exit 1
t1=$(date +%s%N)
big_table "$T/reloc" "relocated entries (DYNFTRACE_PATCH; one atomic store each)" 1
start=$( { time -p env DYNFTRACE_PATCH='[fgh]_[0-9]*' "$T/cb-reloc" none >/dev/null 2>&1; } 2>&1 | awk '/^real/ { print $2 }')
nostart=$( { time -p "$T/cb-reloc" none >/dev/null 2>&1; } 2>&1 | awk '/^real/ { print $2 }')
echo "Start-up with 100,000 entries to relocate (decode, copy, write the jumps): ${start} s, against ${nostart} s without (one run each; the whole run above took $(((t1 - t0) / 1000000)) ms)."
