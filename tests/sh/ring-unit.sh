#!/usr/bin/env bash
# description: per-thread ring buffer: nesting, exact losses, overwrite, threads, fork, shutdown, clock
# config: asan
# config: tsan
#
# lib/ring/ring.c is hidden in the runtime, so tests/ring/t-ring.c is built with
# lib/ring/ring.c, lib/ring/ring_salvage.c and lib/core/log.c compiled in. Each mode of t-ring is a TAP
# program (see its header); this script prints one TAP line per mode.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"

build_t_ring

# run_mode NAME MODE ARGS...: one TAP line for one t-ring mode.
run_mode() {
	local name=$1
	shift
	local dir="$T/d-$1"
	rm -rf "$dir"
	"$T/t-ring" "$1" "$dir" "${@:2}" >"$T/out" 2>"$T/err"
	local rc=$? p f
	p=$(grep -c '^ok ' "$T/out")
	f=$(grep -c '^not ok ' "$T/out")
	if [ $rc -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
		ok "$name ($p checks)"
		grep '^# ' "$T/out" | head -5
	else
		notok "$name: status $rc, $f of $((p + f)) checks failed"
		cat "$T/out" "$T/err" | grep -Ev '^ok ' | head -20 | sed -e 's/^/# /'
	fi
}

run_mode "basic: 5 threads x every event type, decoded intact with the timestamps returned" basic
run_mode "nested: a timer signal handler writes in the middle of events (64 KiB pages)" nested
run_mode "nested: the same with 4 KiB pages (nested page switches, losses counted)" nested 4096 4
run_mode "no-overwrite, 2 x 4 KiB, consumer stalled: exact losses, oldest kept" lost
run_mode "no-overwrite, exact losses with a signal handler writing too" lost nest
run_mode "no-overwrite, full: smaller events that would fit are dropped too (page plugged)" plug
run_mode "overwrite (flight recorder), 2 x 4 KiB: newest kept, exact losses" overwrite
run_mode "overwrite with a signal handler writing too" overwrite nest
run_mode "64 short threads: flushed and freed when they exit" threads
if [ -n "$SAN" ]; then
	# The child of a multi-threaded process starts a thread (its consumer):
	# TSan does not support that, and GCC 12's ASan allocator has no fork
	# handlers (the child can deadlock in its first allocation).
	skip "fork (not under $SAN)"
else
	run_mode "fork: the child writes its own stream, parent's buffers dropped" fork
	run_mode "fork: the forking thread's events of the window, kept for the parent, counted lost in the child" forkwin
fi
run_mode "shutdown twice, concurrently, with writers running: nothing completed is lost" shutdown
run_mode "recording again after shutdown; stream-IMG-TID[.N] names; buffer sizes" reinit
run_mode "readers in memory (overwrite): trace_pipe and trace cursors never return a torn event, count every loss" readers
run_mode "readers while the consumer records (no-overwrite): the same, and the session has every event" readers disk
DYNFTRACE_CLOCK=vdso run_mode "clock (vdso): monotonic, equals CLOCK_MONOTONIC" clock
DYNFTRACE_CLOCK=vdso run_mode "clock across the wraps of its deltas: events after long silences keep their exact time" clockwrap
if grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo; then
	DYNFTRACE_CLOCK=tsc run_mode "clock (tsc): calibrated, monotonic, close to CLOCK_MONOTONIC" clock
else
	skip "clock (tsc): no invariant TSC"
fi
tap_end
