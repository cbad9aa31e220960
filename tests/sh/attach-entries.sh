#!/usr/bin/env bash
# description: attach -P to a program built without sites: entries relocated in a running process, threads waiting inside the replaced bytes moved into the block and back at detach, cycles, record -p -P
# config: asan
#
# tests/progs/entry-waits.c (no dynftrace flags) has a thread blocked in the
# system call inside sys_fn's first bytes and another whose signal handler
# blocks, interrupted there; two workers call sys_fn in a loop. Then:
#   - attach -P sys_fn: one entry relocated, both waiting threads moved
#     (the blocked one's instruction pointer leaves sys_fn), tracing with
#     function_graph sees sys_fn, each wait completes with its result;
#   - detach: the entry is written back, the thread waiting in the block's
#     copy is moved back to the very instruction it was stopped at before
#     the attach, the runtime and the decoder are unmapped;
#   - ATTACH_CYCLES (default 20) attach -P / trace / wake / detach cycles:
#     results exact, malloc's bytes in use and the mappings the same;
#   - attach -P '*' reports how many entries it cannot patch, on its own output, not the
#     program's stderr.
#   - record -p PID -P sys_fn (and -F sys_fn) records sys_fn; attach without -P refuses a
#     process with no sites and says to name functions with -P.
# Needs libcapstone4. Env: TOP B CC SAN; ATTACH_CYCLES.
. "$(dirname "$0")/../gen/common.sh"
P=$TOP/tests/progs
D=$B/dynftrace
CYCLES=${ATTACH_CYCLES:-20}
[ -n "$SAN" ] && CYCLES=${ATTACH_CYCLES:-8}

if ! ls /usr/lib/x86_64-linux-gnu/libcapstone.so.4 >/dev/null 2>&1 &&
	! ldconfig -p 2>/dev/null | grep -q libcapstone.so.4; then
	skip "libcapstone4 is not installed"
	tap_end
	exit 0
fi
# shellcheck disable=SC2086
if ! $CC $CFLAGS_T $SANFLAGS "$P/entry-waits.c" -o "$T/ew" -lpthread 2>"$T/build.log"; then
	echo "not ok 1 - build entry-waits"
	diag_file "$T/build.log"
	exit 1
fi
. "$(dirname "$0")/../gen/attach.sh"

start ew env GLIBC_TUNABLES=glibc.malloc.tcache_count=0 "$T/ew" || {
	echo "not ok 1 - entry-waits did not start"
	exit 1
}
ew=$pid
read -r _ _ rfd sfd < <(grep '^ready' "$T/ew.out")

# task_pc TID: the instruction pointer /proc shows for a blocked thread.
task_pc() { awk '{ print $NF }' "/proc/$ew/task/$1/syscall" 2>/dev/null; }
# in_read TID: is the thread blocked in read(2) (system call 0)?
in_read() { [ "$(cut -d' ' -f1 "/proc/$ew/task/$1/syscall" 2>/dev/null)" = 0 ]; }
# the two waiting threads
waiters() {
	for t in /proc/$ew/task/*; do
		in_read "${t##*/}" && echo "${t##*/}"
	done
}
for _ in $(seq 200); do
	[ "$(waiters | wc -l)" -eq 2 ] && break
	sleep 0.05
done
mapfile -t w < <(waiters)
# in_prog PC: is PC in the program's own code?
in_prog() {
	local exe lo hi
	exe=$(readlink "/proc/$ew/exe")
	while read -r range _ _ _ _ path; do
		[ "$path" = "$exe" ] || continue
		lo=$((0x${range%-*})) hi=$((0x${range#*-}))
		[ $(($1)) -ge $lo ] && [ $(($1)) -lt $hi ] && return 0
	done <"/proc/$ew/maps"
	return 1
}
# The reader waits at sys_fn's own syscall, in the program; the
# signaller's handler in libc's read.
reader=
for t in "${w[@]}"; do
	in_prog "$(task_pc "$t")" && reader=$t
done
pc0=$(task_pc "$reader")
[ "${#w[@]}" -eq 2 ] && [ -n "$pc0" ]
check $? "two threads wait inside sys_fn's first bytes (the reader at $pc0)"

# wake N: one byte to each pipe, then wait for "read N" and "signal N"
wake() {
	printf r >"/proc/$ew/fd/$rfd" && printf s >"/proc/$ew/fd/$sfd" || return 1
	for _ in $(seq 200); do
		grep -q "^read $1\$" "$T/ew.out" && grep -q "^signal $1\$" "$T/ew.out" && return 0
		sleep 0.05
	done
	return 1
}
clean() {
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$ew/status" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != T ] && [ "$st" != t ] && ! grep -q '^BAD' "$T/ew.out"
}
heap_in_use() {
	local n
	n=$(grep -c '^heap ' "$T/ew.out")
	kill -USR2 "$ew" || return 1
	for _ in $(seq 100); do
		[ "$(grep -c '^heap ' "$T/ew.out")" -gt "$n" ] && break
		sleep 0.05
	done
	heap=$(grep '^heap ' "$T/ew.out" | sed -n "$((n + 1))p" | cut -d' ' -f2)
	[ -n "$heap" ]
}

# ---- one cycle, looked at closely
out=$($D attach -P sys_fn "$ew" 2>&1)
rc=$?
echo "$out" | sed -e 's/^/# /'
[ $rc -eq 0 ] && echo "$out" | grep -q '^1 of them are functions. entries patched by relocation' &&
	echo "$out" | grep -q 'moved out of NOP runs or patched entries'
check $? "attach -P sys_fn relocates its entry and moves the waiting threads"
pc1=$(task_pc "$reader")
[ -n "$pc1" ] && [ "$pc1" != "$pc0" ]
check $? "the blocked thread now waits in the block ($pc1)"
$D ctl "$ew" current_tracer function_graph && $D ctl "$ew" tracing_on 1
wake 1
check $? "both waits complete: the read and the signal handler's return"
sleep 0.2
$D ctl "$ew" trace >"$T/trace" 2>&1
grep -q 'sys_fn' "$T/trace"
check $? "function_graph traces sys_fn through its relocated entry"
wake 2
check $? "and again, through the block"
# The reader loops back into read(2) after its second result; on a loaded
# machine it may still be on its way when the wake returns. Detach once it
# waits there again, in the block.
for _ in $(seq 200); do
	in_read "$reader" && break
	sleep 0.05
done
out=$($D detach "$ew" 2>&1)
rc=$?
echo "# $out"
[ $rc -eq 0 ] && echo "$out" | grep -q 'the runtime is unloaded'
check $? "detach unloads the runtime with a thread waiting in the block"
[ "$(task_pc "$reader")" = "$pc0" ]
check $? "the waiting thread is back at the original instruction ($(task_pc "$reader"))"
! grep -qE 'libdynftrace|libcapstone' "/proc/$ew/maps"
check $? "no mapping of the runtime or the decoder remains"
wake 3
clean
check $? "the waits go on, results exact"

# ---- cycles
n=3
for _ in 1 2; do
	$D attach -P sys_fn "$ew" >/dev/null 2>&1 && $D ctl "$ew" current_tracer function_graph &&
		$D ctl "$ew" tracing_on 1 && wake $((n += 1))
	$D detach "$ew" >/dev/null 2>&1
done
snapshot() { awk '$6 == "[heap]" { sub(/-.*/, "", $1) } { print $1, $2, $6 }' "/proc/$ew/maps"; }
snapshot >"$T/before.maps"
heap_in_use
heap0=$heap
fails=0
for i in $(seq "$CYCLES"); do
	if ! $D attach -P sys_fn "$ew" >"$T/cycle.out" 2>&1; then
		fails=$((fails + 1))
		diag_file "$T/cycle.out" 3
		continue
	fi
	[ $((i % 2)) = 0 ] && $D ctl "$ew" current_tracer function_graph
	[ $((i % 2)) = 1 ] && $D ctl "$ew" current_tracer function
	$D ctl "$ew" tracing_on 1
	wake $((n += 1)) || fails=$((fails + 1))
	$D detach "$ew" >"$T/cycle.out" 2>&1 && grep -q unloaded "$T/cycle.out" ||
		{ fails=$((fails + 1)) && diag_file "$T/cycle.out" 3; }
done
[ $fails -eq 0 ]
check $? "$CYCLES attach -P / trace / wake / detach cycles ($fails failed)"
heap_in_use
if [ -n "$SAN" ]; then
	skip "malloc's bytes and mappings: not comparable under a sanitizer"
else
	[ -n "$heap0" ] && [ "$heap0" = "$heap" ]
	check $? "no malloc'd byte more or less after $CYCLES cycles ($heap0, then $heap)"
	snapshot >"$T/after.maps"
	cmp -s "$T/before.maps" "$T/after.maps" || diff "$T/before.maps" "$T/after.maps" |
		head | sed 's/^/# /'
	cmp -s "$T/before.maps" "$T/after.maps"
	check $? "the same mappings after $CYCLES cycles"
fi
clean
check $? "exact results through every cycle"

# ---- record -p -P
$D record -d "$T/sess" -p "$ew" -P sys_fn --duration 300ms 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] && $D replay -d "$T/sess" 2>&1 | grep -q 'sys_fn()'
check $? "record -p -P sys_fn records sys_fn"
[ $rc -eq 0 ] || diag_file "$T/rec.err"
! grep -q 'libdynftrace' "/proc/$ew/maps" && clean
check $? "record -p leaves the process as it was"

# ---- record -p -F: on a program without sites, a filter patches what it names
rm -rf "$T/sess"
$D record -d "$T/sess" -p "$ew" -F sys_fn --duration 300ms 2>"$T/rec.err"
rc=$?
[ $rc -eq 0 ] && $D replay -d "$T/sess" 2>&1 | grep -q 'sys_fn()' &&
	grep -qP '^patched\t1\t' "$T/sess"/patch-*.txt
check $? "record -p -F sys_fn on a program without sites patches and records sys_fn"
[ $rc -eq 0 ] || diag_file "$T/rec.err"
! grep -q 'libdynftrace' "/proc/$ew/maps" && clean
check $? "record -p -F leaves the process as it was"

# ---- refusals: the command counts them, the program's stderr is left alone
out=$($D attach -P '*' "$ew" 2>&1)
rc=$?
nref=$(echo "$out" | sed -n 's/^\([0-9][0-9]*\) functions\{0,1\} named by -P could not be patched.*/\1/p')
[ $rc -eq 0 ] && [ -n "$nref" ] && [ "$nref" -ge 1 ] && ! grep -q 'dynftrace\[' "$T/ew.out"
check $? "attach -P '*' counts the entries it cannot patch ($nref, _start among them), the program's stderr untouched"
[ $rc -eq 0 ] || echo "$out" | sed -e 's/^/# /'
grep 'dynftrace\[' "$T/ew.out" | head -3 | sed -e 's/^/# /'
$D detach "$ew" >"$T/detach.out" 2>&1 || diag_file "$T/detach.out"
wake $((n += 1)) && clean
check $? "the waits go on after attach -P '*' and detach"

# ---- no sites without -P
out=$($D attach "$ew" 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'name functions to patch with -P'
check $? "attach without -P to a process with no sites says to use -P ($out)"
tap_end
