#!/usr/bin/env bash
# ring_bench.sh - the trace clock and the per-thread ring buffer
# (bench/ring_bench.c with lib/ring/ring.c compiled in). Prints figures (markdown
# tables); never fails a test. Results: docs/PERFORMANCE.md, "Trace clock
# and ring buffer".
#
# Usage: bench/ring_bench.sh [PAIRS [REPS]]   (default 20000000 5)
# Needs gcc; valgrind for the instruction counts (skipped without it).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
LIB_INC="-iquote $TOP/lib/core -iquote $TOP/lib/ring -iquote $TOP/lib/arch/x86_64"
PAIRS=${1:-20000000}
REPS=${2:-5}
CC=${CC:-gcc}
W=$(mktemp -d) # under TMPDIR (/tmp): the disk case
TMPFS_NAME="$(df --output=fstype "$W" 2>/dev/null | tail -1) ($(dirname "$W"))"
SHM=$(mktemp -d /dev/shm/ring_bench.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$W" "$SHM"' EXIT
# The runtime's flags (lib/ is built -fPIC, hidden, initial-exec TLS).
$CC -std=gnu11 -O2 -g -D_GNU_SOURCE -I"$TOP/include" $LIB_INC -fno-strict-aliasing -fPIC -fvisibility=hidden \
	-ftls-model=initial-exec "$TOP/lib/ring/ring.c" "$TOP/lib/ring/ring_salvage.c" "$TOP/lib/core/log.c" "$TOP/lib/ring/clock.c" "$TOP/lib/ring/ctf.c" "$TOP/lib/ring/ring_flush.c" "$TOP/lib/ring/ring_read.c" "$TOP/lib/core/config.c" "$TOP/lib/core/threads.c" "$TOP/bench/ring_bench.c" \
	-o "$W/ring_bench" -lpthread || exit 1

echo "## clock"
for c in vdso tsc; do
	DYNFTRACE_CLOCK=$c "$W/ring_bench" clock 5
done
echo
echo "## event pairs (entry 4-byte payload + exit), one writer thread, consumer draining"
echo
echo "| directory | buffer | clock | ns/pair (median) | min-max | empty loop ns | bytes/pair | lost of attempted |"
echo "|---|---|---|---|---|---|---|---|"
for c in tsc vdso; do
	for pages in 64 16; do
		for d in "$SHM" "$W"; do
			DYNFTRACE_CLOCK=$c "$W/ring_bench" pairs "$d/rb" "$PAIRS" "$REPS" "$pages" |
				sed "s|$d/rb|$( [ "$d" = "$W" ] && echo "$TMPFS_NAME" || echo 'tmpfs')|"
			rm -rf "$d/rb"
		done
	done
done
if command -v valgrind >/dev/null; then
	echo
	# 200000 pairs fit the 4 MiB buffer: no drop paths even though the
	# consumer crawls under valgrind.
	echo "## instructions per event (callgrind, 200000 pairs, TSC clock)"
	DYNFTRACE_CLOCK=tsc valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" \
		"$W/ring_bench" pairs "$SHM/cg" 200000 1 64 >/dev/null 2>&1
	callgrind_annotate "$W/cg.out" 2>/dev/null |
		awk '/:ring_event_(begin|end) \[/ {
			gsub(",", "", $1)
			for (i = 2; i <= NF; i++)
				if ($i ~ /:ring_event_/) { f = $i; sub(/.*:/, "", f) }
			printf "%s: %.1f instructions per call (clock read included)\n", f, $1 / 402000
		}'
fi
