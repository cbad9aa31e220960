#!/usr/bin/env bash
# views.sh - what the views of a recorded session cost: output size per
# recorded call of dump --chrome, --perfetto, --flame-graph and --svg, and
# the peak RSS and user time of each command (tests/progs/maxrss.c). Prints
# a markdown table; never fails a test. Results: docs/PERFORMANCE.md,
# "Views".
#
# Usage: bench/views.sh [FIB_N [LOOPS]]   (default 22 1000000: about 1.06
# million calls of bench/callheavy.c, one thread)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$TOP/build}
DFT=$B/dynftrace
CC=${CC:-gcc}
N=${1:-22}
LOOPS=${2:-1000000}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
$CC -O2 -fpatchable-function-entry=5 "$TOP/bench/callheavy.c" -o callheavy || exit 1
$CC -O2 "$TOP/tests/progs/maxrss.c" -o maxrss || exit 1
"$DFT" record -b 16384 -d s -- ./callheavy "$N" "$LOOPS" >/dev/null 2>rec.err || {
	cat rec.err
	exit 1
}
calls=$("$DFT" info -d s | sed -n 's/^# events *: .*(\([0-9,]*\) calls)/\1/p' | tr -d ,)
[ -n "$calls" ] || calls=$(("$LOOPS" + 1))
streams=$(du -cb s/ctf/stream-* | tail -1 | cut -f1)
echo "session: callheavy $N $LOOPS, $calls calls, streams $streams bytes ($(awk "BEGIN { printf \"%.1f\", $streams / $calls }") per call)"
echo
echo "| output | bytes | bytes per call | gzip -1 bytes per call | peak RSS KiB | user s |"
echo "|---|---|---|---|---|---|"
for f in chrome perfetto flame-graph svg; do
	/usr/bin/time -f "%U" -o time.txt ./maxrss "$DFT" dump --$f -d s -o out.$f 2>rss.txt
	rss=$(sed -n 's/^maxrss //p' rss.txt)
	size=$(stat -c %s out.$f)
	gz=$(gzip -1 -c out.$f | wc -c)
	printf '| --%s | %s | %s | %s | %s | %s |\n' "$f" "$size" \
		"$(awk "BEGIN { printf \"%.2f\", $size / $calls }")" \
		"$(awk "BEGIN { printf \"%.2f\", $gz / $calls }")" "$rss" "$(cat time.txt)"
done
/usr/bin/time -f "%U" -o time.txt ./maxrss "$DFT" graph -d s main >/dev/null 2>rss.txt
printf '| graph main | - | - | - | %s | %s |\n' "$(sed -n 's/^maxrss //p' rss.txt)" "$(cat time.txt)"
