#!/usr/bin/env bash
# attach.sh - how long `dynftrace attach` and `detach` stop a running
# process (every thread), by threads and sites, and the time from `record
# -p` to recording. The target (bench/attach_target.c + N generated
# functions, not linked with the runtime) keeps every thread calling every
# function. For each case: attach, turn function_graph on (every site
# patched), detach; RUNS times, the median. Prints a markdown table.
# Usage: bench/attach.sh [RUNS]   (B: build dir)
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-5}
B=${B:-build}
D=$B/dynftrace
T=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 $p 2>/dev/null; done; rm -rf "$T"' EXIT
med() { sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "nan" }'; }

echo "## attach / detach stop time ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "Every thread of the target calls every function in a loop (half of them sleep 1 ms per round). 'stop' is the time every thread is stopped; 'load' the time the one thread that loads the runtime is held while the others run. Median of $RUNS."
echo
echo "| sites | threads | attach stop (ms) | load, one thread (ms) | detach stop (ms) | record -p until recording (ms) |"
echo "|---:|---:|---:|---:|---:|---:|"
for n in 1000 10000 100000; do
	tests/gen/genfuncs.sh -S $n >"$T/f.s"
	gcc -O2 -c "$T/f.s" -o "$T/f.o" &&
		gcc -O2 -pthread bench/attach_target.c "$T/f.o" -o "$T/target" || exit 1
	for th in 1 16 64; do
		"$T/target" $th >"$T/out" &
		pid=$!
		pids+=($pid)
		for _ in $(seq 200); do grep -q ready "$T/out" && break; sleep 0.05; done
		: >"$T/a"
		: >"$T/l"
		: >"$T/d"
		: >"$T/r"
		for _ in $(seq "$RUNS"); do
			out=$($D attach $pid 2>&1) || { echo "# attach failed: $out" >&2; break; }
			echo "$out" | sed -n 's/^stopped: \([0-9.]*\) ms.*/\1/p' >>"$T/a"
			echo "$out" | sed -n 's/.*was held \([0-9.]*\) ms.*/\1/p' >>"$T/l"
			$D ctl $pid current_tracer function_graph && $D ctl $pid tracing_on 1
			out=$($D detach $pid 2>&1)
			echo "$out" | sed -n 's/.*stopped \([0-9.]*\) ms.*/\1/p' >>"$T/d"
			# record -p: from the command's start until the process records
			$D record -d "$T/s" -p $pid --duration 200ms 2>"$T/rec.err" >/dev/null
			sed -n 's/.*recording after \([0-9.]*\) ms.*/\1/p' "$T/rec.err" >>"$T/r"
			rm -rf "$T/s"
		done
		kill -9 $pid
		wait $pid 2>/dev/null
		printf '| %s | %s | %s | %s | %s | %s |\n' $n $th "$(med <"$T/a")" "$(med <"$T/l")" \
			"$(med <"$T/d")" "$(med <"$T/r")"
	done
done

# ---- the cost of a traced call once attached, against record
W=${PERCALL_WINDOWS:-300}
K=${PERCALL_CALLS:-20000}
gcc -O2 -fpatchable-function-entry=5 bench/percall.c -o "$T/pc" || exit 1
best_of() { sort -g | head -1; }
: >"$T/p_base"
: >"$T/p_rec"
: >"$T/p_att"
for _ in $(seq "$RUNS"); do
	"$T/pc" "$W" "$K" | sed -n 's/^percall //p' >>"$T/p_base"
	rm -rf "$T/s"
	$D record -d "$T/s" -- "$T/pc" "$W" "$K" 2>/dev/null | sed -n 's/^percall //p' >>"$T/p_rec"
	rm -rf "$T/s"
	"$T/pc" "$W" "$K" wait >"$T/pc.out" &
	pc=$!
	for _ in $(seq 100); do grep -q ready "$T/pc.out" && break; sleep 0.02; done
	$D record -d "$T/s" -p $pc 2>"$T/rec.err" &
	rec=$!
	for _ in $(seq 500); do grep -q 'recording process' "$T/rec.err" && break; sleep 0.02; done
	kill -USR1 $pc
	wait $pc
	wait $rec
	sed -n 's/^percall //p' "$T/pc.out" >>"$T/p_att"
done
base=$(best_of <"$T/p_base")
echo
echo "## Cost of a traced call once attached ($(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "bench/percall.c (leaf() in $W windows of $K calls, the fastest window, best of $RUNS runs), function_graph recorded to disk: started under \`record\`, or already running when \`record -p\` attached."
echo
echo "| how | ns per call | traced call cost (ns) |"
echo "|---|---:|---:|"
for c in "untraced:p_base" "record:p_rec" "record -p (attached):p_att"; do
	v=$(best_of <"$T/${c##*:}")
	printf '| %s | %s | %s |\n' "${c%%:*}" "$v" "$(awk -v a="$v" -v b="$base" 'BEGIN { printf "%.2f", a - b }')"
done
