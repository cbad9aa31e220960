#!/usr/bin/env bash
# pathlen.sh - instructions executed per traced call, by route: the same
# bench/percall.c loop run under callgrind with two call counts, the
# difference divided by the extra calls (start-up and the runtime's set-up
# cancel out). Unlike a time, the figure does not depend on the machine or
# its load, and it is what a core shared with a busy sibling hyperthread
# pays for: there the instructions no longer hide behind the counter reads
# (docs/PERFORMANCE.md). Prints a markdown table. Needs valgrind.
# Usage: bench/pathlen.sh. With FUNTRACE=DIR (a checkout of
# github.com/yosefk/funtrace) funtrace's gcc method is counted too.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
command -v valgrind >/dev/null || {
	echo "pathlen: valgrind is not installed (scripts/deps.sh bench)" >&2
	exit 1
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. bench/lib/percall_progs.sh
# ir K PROG CMD...: the instructions of PROG's own process (not the
# recorder's) when CMD runs PROG with 1 window of K calls.
ir() {
	local k=$1 prog=$2 f
	shift 2
	rm -rf "$T/cg" "$T/d"
	mkdir "$T/cg"
	valgrind --tool=callgrind --trace-children=yes --smc-check=all \
		--callgrind-out-file="$T/cg/out.%p" "$@" "$prog" 1 "$k" >/dev/null 2>"$T/err" || return 1
	for f in "$T"/cg/out.*; do
		if grep -q "^cmd: *$prog 1 $k\$" "$f"; then
			sed -n 's/^summary: //p' "$f"
			return 0
		fi
	done
	return 1
}
row() {
	local name=$1 prog=$2 a b
	shift 2
	if a=$(ir 10000 "$prog" "$@") && b=$(ir 30000 "$prog" "$@") && [ -n "$a" ] && [ -n "$b" ]; then
		awk -v n="$name" -v a="$a" -v b="$b" 'BEGIN { printf "| %s | %.1f |\n", n, (b - a) / 20000 }'
	else
		echo "| $name | (did not run: $(tail -1 "$T/err")) |"
	fi
}
R="env DYNFTRACE_CONTROL=0 $B/dynftrace record --overwrite -d $T/d"
echo "## Instructions per traced call ($(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
echo "bench/percall.c's loop under callgrind: (instructions with 30,000 calls - with 10,000) / 20,000. The loop and leaf() are in every row."
echo
echo "| how | instructions per call |"
echo "|---|---|"
row "untraced" "$T/pc"
row "dynftrace function_graph (graph shortcut: thunk)" "$T/pc" $R --
row "dynftrace -T function (graph shortcut: thunk)" "$T/pc" $R -T function --
row "dynftrace function_graph, per-ops route" "$T/pc" env DYNFTRACE_GRAPH_SHORTCUT=0 $R --
row "plain binary, -P leaf, function_graph" "$T/pcp" $R -P leaf --
row "plain binary, -P leaf, -T function" "$T/pcp" $R -T function -P leaf --
if [ -n "${FUNTRACE:-}" ]; then
	row "funtrace (gcc -pg -mfentry -minstrument-return=call)" "$T/pcf" env FUNTRACE_FTRACE_EVENTS_IN_BUF=0
else
	echo "| funtrace | (FUNTRACE=DIR not given) |"
fi
