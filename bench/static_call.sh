#!/usr/bin/env bash
# static_call.sh - static calls for tracepoints, in user space: hackbench with one tracepoint in
# the message path, compared across dispatch variants; plus callgrind
# instruction counts. Prints figures (markdown tables); never fails a test.
#
# Usage: bench/static_call.sh [REPS [GROUPS [LOOPS]]]   (default 7 10 400)
# Needs: a built runtime (make), gcc; valgrind for the instruction counts.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
REPS=${1:-7}
GROUPS_=${2:-10}
LOOPS=${3:-400}
CC=${CC:-gcc}
B=$TOP/build
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -f "$B/libdynftrace.so" ] || make -C "$TOP" -s lib || exit 1

RETP="-mindirect-branch=thunk -mfunction-return=thunk"
# name | flags | description
VARIANTS=(
	"none|-DHB_NONE|no tracepoint"
	"disabled|-DHB_DISABLED|tracepoint, disabled (1 NOP)"
	"iter_retp|-DHB_ITER -DDYNFTRACE_TP_ITERATOR $RETP|iterator, function pointer, retpolines"
	"iter|-DHB_ITER -DDYNFTRACE_TP_ITERATOR|iterator, function pointer"
	"sc_ool|-DDYNFTRACE_STATIC_CALL_NO_INLINE|static call, out-of-line (trampoline jmp)"
	"sc_inline||static call, inline (direct call at the site)"
	"none_retp|-DHB_NONE $RETP|(reference) no tracepoint, retpolines"
)
names=()
for v in "${VARIANTS[@]}"; do
	IFS='|' read -r name flags desc <<<"$v"
	# shellcheck disable=SC2086
	$CC -std=gnu11 -O2 -g -I"$TOP/include" $flags "$TOP/bench/hackbench_tp.c" -o "$W/$name" \
		-L"$B" -ldynftrace -Wl,-rpath,"$B" -lpthread || exit 1
	names+=("$name")
done

echo "# hackbench_tp: $GROUPS_ groups x 20 senders x 20 receivers (threads, pipes), $LOOPS loops, 100-byte messages"
echo "# $REPS runs per variant, interleaved; $(nproc) CPUs; $(date -u +%Y-%m-%d)"
for ((r = 0; r < REPS; r++)); do
	for n in "${names[@]}"; do
		"$W/$n" "$GROUPS_" "$LOOPS" | sed -n 's/^Time: //p' >>"$W/$n.times"
	done
done

median() { sort -g "$1" | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f", m}'; }
spread() { sort -g "$1" | awk '{a[NR]=$1} END {printf "%.3f-%.3f", a[1], a[NR]}'; }
base=$(median "$W/none.times")
echo
echo "| variant | median s | min-max s | vs no tracepoint |"
echo "|---|---|---|---|"
for v in "${VARIANTS[@]}"; do
	IFS='|' read -r name flags desc <<<"$v"
	m=$(median "$W/$name.times")
	pct=$(awk -v m="$m" -v b="$base" 'BEGIN {printf "%+.1f%%", (m - b) / b * 100}')
	echo "| $desc | $m | $(spread "$W/$name.times") | $pct |"
done

if ! command -v valgrind >/dev/null; then
	echo "# valgrind not installed: no instruction counts"
	exit 0
fi
# Inclusive instruction count of function $2 in callgrind output $1.
incl() {
	callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
		awk -v f="$2" '$0 ~ (":" f " ") {gsub(",", "", $1); print $1; exit}'
}
# Exclusive (self) count: the function's own instructions, no callees.
self() {
	callgrind_annotate "$1" 2>/dev/null |
		awk -v f="$2" '$0 ~ (":" f " ") {gsub(",", "", $1); print $1; exit}'
}
cg() {
	out=$1
	shift
	valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$out" "$@" >/dev/null 2>&1
}
echo
echo "Instruction counts (callgrind, exact):"
echo
echo "| run | none | disabled | difference |"
echo "|---|---|---|---|"
G=1 L=50
cg "$W/cg.none" "$W/none" $G $L
cg "$W/cg.disabled" "$W/disabled" $G $L
msgs=$((G * 20 * 20 * L))
# The sender loop's own instructions (self cost: no write(), no start-up
# wait, so it does not depend on scheduling).
a=$(self "$W/cg.none" sender)
b=$(self "$W/cg.disabled" sender)
echo "| hackbench $G group, $L loops: sender loop, self ($msgs messages) | $a | $b | $((b - a)) ($(awk -v a="$a" -v b="$b" -v m="$msgs" 'BEGIN {printf "%.2f per message, %+.2f%%", (b - a) / m, (b - a) / a * 100}')) |"
a=$(incl "$W/cg.none" sender)
b=$(incl "$W/cg.disabled" sender)
echo "| same, sender threads inclusive (write() and start-up wait included) | $a | $b | $((b - a)) ($(awk -v a="$a" -v b="$b" 'BEGIN {printf "%+.2f%%", (b - a) / a * 100}')) |"
ta=$(awk '/^summary:/ {print $2}' "$W/cg.none")
tb=$(awk '/^summary:/ {print $2}' "$W/cg.disabled")
echo "| same, whole process (scheduling-dependent) | $ta | $tb | $((tb - ta)) ($(awk -v a="$ta" -v b="$tb" 'BEGIN {printf "%+.3f%%", (b - a) / a * 100}')) |"

N=100000
echo
echo "| microbenchmark, $N calls of the callback | instructions | per call | vs direct call |"
echo "|---|---|---|---|"
for n in sc_inline sc_ool iter; do
	cg "$W/cg.micro.$n" "$W/$n" --micro $N
done
d=$(incl "$W/cg.micro.sc_inline" micro_direct)
row() {
	echo "| $1 | $2 | $(awk -v x="$2" -v n=$N 'BEGIN {printf "%.2f", x / n}') | $(awk -v x="$2" -v d="$d" 'BEGIN {printf "%+.2f%%", (x - d) / d * 100}') |"
}
row "direct call" "$d"
row "static call, inline site" "$(incl "$W/cg.micro.sc_inline" micro_static_call)"
row "static call, out-of-line (trampoline)" "$(incl "$W/cg.micro.sc_ool" micro_static_call)"
row "tracepoint, 1 callback, inline static call" "$(incl "$W/cg.micro.sc_inline" micro_trace)"
row "tracepoint, 1 callback, out-of-line static call" "$(incl "$W/cg.micro.sc_ool" micro_trace)"
row "tracepoint, 1 callback, iterator" "$(incl "$W/cg.micro.iter" micro_trace)"
