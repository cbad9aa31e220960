#!/usr/bin/env bash
# percall.sh - the cost of one traced call (function_graph: entry + exit,
# recorded), measured inside the process (bench/percall.c: the fastest of
# many short windows, so a busy machine does not blur it), for dynftrace's
# routes and for uftrace on the same binary. Prints a markdown table.
# Usage: bench/percall.sh [WINDOWS [CALLS_PER_WINDOW [RUNS]]]
# A bare rdtsc is timed the same way (the floor of one timestamp), and the
# goal of function_graph, 2 x rdtsc + 3 ns, is computed from it. With
# FUNTRACE=DIR (a checkout of github.com/yosefk/funtrace) the same loop is
# also built with funtrace's gcc method (-pg -mfentry
# -minstrument-return=call, its runtime linked in): a 16-byte event per
# entry and per exit into an in-memory cyclic buffer.
set -u
cd "$(dirname "$0")/.."
W=${1:-300}
K=${2:-20000}
RUNS=${3:-3}
B=${B:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. bench/lib/percall_progs.sh
# best NAME CMD...: the lowest "percall" of RUNS runs, then their median.
# The lowest is the path's cost on a quiet core; the median shows how
# often a run was slower (on a VM, a busy sibling hyperthread on the host
# leaves fewer execution slots, and a longer path pays more:
# docs/PERFORMANCE.md). A run whose tracer reports lost events is no
# measurement (a writer that drops events is cheap): it is left out and
# the figure is marked.
best() {
	local v lost="" all=""
	for _ in $(seq "$RUNS"); do
		rm -rf "$T/d"
		v=$("$@" 2>"$T/err" | sed -n 's/^percall //p')
		if grep -q ' lost [0-9,]* events' "$T/err"; then
			lost=" (runs lost events)"
			continue
		fi
		[ -n "$v" ] && all="$all $v"
	done
	if [ -z "$all" ]; then
		echo "nan nan$lost"
		return
	fi
	echo "$(printf '%s\n' $all | sort -g | awk '{ a[NR] = $1 } END { print a[1], a[int((NR + 1) / 2)] }')$lost"
}
base=$(best "$T/pc" "$W" "$K" | cut -d' ' -f1)
echo "## Cost per traced call ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "bench/percall.c: leaf() called in $W windows of $K calls; the fastest window, best of $RUNS runs; gcc -O2 -fpatchable-function-entry=5. function_graph records entry and exit of every call."
echo
echo "| how | ns per call | overhead ns | median of the runs |"
echo "|---|---|---|---|"
row() {
	local name=$1 v
	shift
	v=$(best "$@")
	awk -v n="$name" -v v="$v" -v b="$base" 'BEGIN {
		split(v, f, " "); m = substr(v, length(f[1] " " f[2]) + 1)
		if (f[1] == "nan") printf "| %s | -%s | - | - |\n", n, m
		else printf "| %s | %.2f%s | %.2f | %.2f |\n", n, f[1], m, f[1] - b, f[2] }'
}
echo "| untraced | $base | - | - |"
rdtsc=$(best "$T/pc" "$W" "$K" rdtsc | cut -d' ' -f1)
echo "| one bare rdtsc (not a call: the floor of one timestamp) | $rdtsc | - | - |"
awk -v r="$rdtsc" 'BEGIN { printf "| goal of function_graph: 2 x rdtsc + 3 ns (overhead) | - | %.2f | - |\n", 2 * r + 3 }'
row "dynftrace record (graph shortcut: thunk)" env DYNFTRACE_CONTROL=0 "$B/dynftrace" record -d "$T/d" -- "$T/pc" "$W" "$K"
row "dynftrace record --overwrite (flight recorder, on disk at exit)" env DYNFTRACE_CONTROL=0 "$B/dynftrace" record --overwrite -d "$T/d" -- "$T/pc" "$W" "$K"
row "dynftrace record -T function (graph shortcut: thunk)" env DYNFTRACE_CONTROL=0 "$B/dynftrace" record -T function -d "$T/d" -- "$T/pc" "$W" "$K"
row "dynftrace record -T function, per-ops route" env DYNFTRACE_CONTROL=0 DYNFTRACE_GRAPH_SHORTCUT=0 "$B/dynftrace" record -T function -d "$T/d" -- "$T/pc" "$W" "$K"
if [ -n "${FUNTRACE:-}" ]; then
	row "funtrace (gcc -pg -mfentry -minstrument-return=call, in memory)" env FUNTRACE_FTRACE_EVENTS_IN_BUF=0 "$T/pcf" "$W" "$K"
else
	echo "| funtrace | (FUNTRACE=DIR not given) | - | - |"
fi
row "dynftrace record, control socket on" "$B/dynftrace" record -d "$T/d" -- "$T/pc" "$W" "$K"
row "dynftrace record, per-ops route (DYNFTRACE_GRAPH_SHORTCUT=0)" env DYNFTRACE_CONTROL=0 DYNFTRACE_GRAPH_SHORTCUT=0 "$B/dynftrace" record -d "$T/d" -- "$T/pc" "$W" "$K"
row "dynftrace record, list function (DYNFTRACE_ROUTES=list)" env DYNFTRACE_CONTROL=0 DYNFTRACE_ROUTES=list "$B/dynftrace" record -d "$T/d" -- "$T/pc" "$W" "$K"
# The graph tracer switched on live in a process with control only (no
# session directory: the rings are memory only).
ctl_only() {
	rm -f "$T/go"
	mkfifo "$T/go"
	DYNFTRACE_CONTROL=1 LD_PRELOAD="$PWD/$B/libdynftrace.so" PERCALL_GO="$T/go" \
		"$T/pc" "$@" >"$T/ctl.out" 2>/dev/null &
	local p=$! i
	for i in $(seq 200); do
		"$B/dynftrace" ctl "$p" current_tracer function_graph >/dev/null 2>&1 && break
		sleep 0.05
	done
	echo go >"$T/go"
	wait "$p"
	cat "$T/ctl.out"
}
row "control only, function_graph on through ctl (no record)" ctl_only "$W" "$K"
# The same leaf() built without sites, its entry relocated (-P): the
# preserving trampoline saves the whole register state (XSAVE).
row "plain binary, untraced" "$T/pcp" "$W" "$K"
row "plain binary, -P leaf, tracing off (the entry's jump only)" env DYNFTRACE_CONTROL=0 "$B/dynftrace" record --disabled -d "$T/d" -P leaf -- "$T/pcp" "$W" "$K"
row "plain binary, -P leaf, function_graph" env DYNFTRACE_CONTROL=0 "$B/dynftrace" record -d "$T/d" -P leaf -- "$T/pcp" "$W" "$K"
row "plain binary, -P leaf, -T function" env DYNFTRACE_CONTROL=0 "$B/dynftrace" record -T function -d "$T/d" -P leaf -- "$T/pcp" "$W" "$K"
if command -v uftrace >/dev/null; then
	row "uftrace record -P ." uftrace record -P . -d "$T/d" "$T/pc" "$W" "$K"
	row "uftrace record -P . (plain binary, dynamic patching)" uftrace record -P . -d "$T/d" "$T/pcp" "$W" "$K"
else
	echo "| uftrace record -P . | (not installed) | - | - |"
fi
