#!/usr/bin/env bash
# args.sh - what recording arguments and return values (-A/-R) costs, and
# that functions without a specification pay nothing for the feature.
# bench/percall.c's leaf(x) is recorded by function_graph:
#   - without any specification, with this build and (BASE=DIR) with
#     another build, e.g. the commit before the feature;
#   - with a specification on another function only (main): leaf keeps
#     the graph shortcut;
#   - with -A leaf@arg1,arg2 -R leaf@retval (two integers and the return
#     value: leaf's rsi is whatever the caller left, the cost is the same);
#   - with -A leaf@arg1/s (a string read: leaf's argument is a small
#     integer, so every read is a bad pointer, one process_vm_readv each).
# Two measures: instructions per call from callgrind (exact, the machine's
# load does not change them: (I(2K) - I(K)) / K, the runtime's consumer
# thread included; system calls count as one instruction), and ns per call
# as bench/percall.sh takes it (the fastest of W windows of K calls, best
# of RUNS). Prints a markdown table.
# Also the per-ops route without a specification (DYNFTRACE_GRAPH_SHORTCUT=0,
# what a site with one takes), before and after.
# Usage: [BASE=DIR] bench/args.sh [K [W [RUNS]]]
set -u
cd "$(dirname "$0")/.."
K=${1:-20000}
W=${2:-200}
RUNS=${3:-3}
B=${B:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
gcc -O2 -fpatchable-function-entry=5 bench/percall.c -o "$T/pc" || exit 1

# inst BUILD ARGS...: instructions of "pc 1 N" under record, for N = K and 2K
inst() {
	local b=$1 n f i1 i2
	shift
	for n in "$K" $((2 * K)); do
		f=$T/cg.$n
		rm -rf "$T/d"
		if [ "$b" = none ]; then
			valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$f" \
				"$T/pc" 1 "$n" >/dev/null 2>&1
		else
			env ${ENVV:-} DYNFTRACE_CONTROL=0 "$b/dynftrace" record --force -d "$T/d" "$@" -- \
				valgrind --tool=callgrind --smc-check=all --trace-children=no \
				--callgrind-out-file="$f" "$T/pc" 1 "$n" >/dev/null 2>&1
		fi
		sed -n 's/^summary: \([0-9]*\).*/\1/p' "$f" >"$T/i.$n"
	done
	i1=$(cat "$T/i.$K")
	i2=$(cat "$T/i.$((2 * K))")
	awk -v a="$i1" -v b="$i2" -v k="$K" 'BEGIN { if (a == "" || b == "") print "nan"; else printf "%.1f", (b - a) / k }'
}

# ns BUILD ARGS...: the fastest window's ns per call, best of RUNS
ns() {
	local b=$1 best="" v
	shift
	for _ in $(seq "$RUNS"); do
		rm -rf "$T/d"
		if [ "$b" = none ]; then
			v=$("$T/pc" "$W" "$K" | sed -n 's/^percall //p')
		else
			v=$(env ${ENVV:-} DYNFTRACE_CONTROL=0 "$b/dynftrace" record -d "$T/d" "$@" -- "$T/pc" "$W" "$K" 2>/dev/null |
				sed -n 's/^percall //p')
		fi
		[ -n "$v" ] || continue
		if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$v; fi
	done
	echo "${best:-nan}"
}

echo "## Arguments and return values ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "bench/percall.c's leaf() recorded by function_graph; instructions: callgrind, (I(2K) - I(K)) / K with K = $K; ns: fastest of $W windows of $K calls, best of $RUNS runs."
echo
echo "| how | instructions per call | ns per call |"
echo "|---|---|---|"
row() {
	local name=$1
	shift
	echo "| $name | $(inst "$@") | $(ns "$@") |"
}
row "untraced" none
[ -n "${BASE:-}" ] && row "record, no specification (BASE: $(basename "$BASE"))" "$BASE/build"
row "record, no specification" "$B"
row "record, -A main@arg1 (another function)" "$B" -A 'main@arg1'
# the per-ops route (what a site with a specification takes), without one
[ -n "${BASE:-}" ] && ENVV=DYNFTRACE_GRAPH_SHORTCUT=0 row "record, per-ops route (DYNFTRACE_GRAPH_SHORTCUT=0), no specification (BASE)" "$BASE/build"
ENVV=DYNFTRACE_GRAPH_SHORTCUT=0 row "record, per-ops route (DYNFTRACE_GRAPH_SHORTCUT=0), no specification" "$B"
row "record, -A leaf@arg1,arg2 -R leaf@retval" "$B" -A 'leaf@arg1,arg2' -R 'leaf@retval'
# a string read is a system call per call: fewer calls
K=$((K / 10)) W=$((W / 10))
row "record, -A leaf@arg1/s (a bad pointer: one process_vm_readv; K/10, W/10)" "$B" -A 'leaf@arg1/s'
