#!/usr/bin/env bash
# description: functions entered with the stack 8 off its 16-byte alignment (x86-64: gcc's local calls) are traced on every route and tracer without a fault; the runtime's frames keep the alignment
#
# tests/progs/stack-align.c calls its traced functions with %rsp 0 mod 16
# at their entry, as gcc does for local functions that need no alignment
# (-fipa-stack-alignment). On riscv64 no entry is misaligned (the psABI
# and the compilers keep sp 16-aligned at every call): the same checks
# then say that the trampolines keep that alignment into the runtime's C
# code and the callbacks (aarch64: skipped, tests/cross/sh-skip). The trampolines must align the stack before any
# C code runs: the user ops' callbacks check their frames on the list, per-
# ops and light routes; under `dynftrace record` with each tracer and the
# graph tracer's slow paths, each thread's first traced call is misaligned
# and the runtime's mmap calls (shadow stack, ring buffer) are checked
# through the program's own mmap. Before the trampolines aligned the stack,
# the recorded runs died of SIGSEGV (a movaps in the runtime's C code).
# Default configuration only: the program defines mmap, which ASan's own
# mmap interceptor must not meet. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
[ -n "$SAN" ] && { skip "the program defines mmap (no sanitizer)"; tap_end; exit 0; }

# what the threads' first traced calls are
first="first traced call misaligned"
[ "$ARCH" = riscv64 ] && first="entries 16-aligned (the psABI's only form)"
for cc in $compilers; do
	if ! CC=$cc cc_prog "$T/sa-$cc" $TRACE_FLAGS "$TOP/tests/progs/stack-align.c" 2>"$T/build.log"; then
		notok "build stack-align with $cc"
		diag_file "$T/build.log"
		continue
	fi
	out=$("$T/sa-$cc" ops 2>&1)
	check $? "$cc: user ops on the list, per-ops and light routes: every callback on an aligned stack"
	[ "$(echo "$out" | grep -c ' 0 misaligned')" -eq 3 ] || diag_file <(echo "$out")
	# name ENV... -- RECORD-OPTS...
	rec() {
		local name=$1
		shift
		local envs=()
		while [ "$1" != -- ]; do envs+=("$1"); shift; done
		shift
		rm -rf "$T/d"
		env "${envs[@]}" "$B/dynftrace" record -d "$T/d" "$@" -- "$T/sa-$cc" threads 20 \
			>"$T/out" 2>"$T/err"
		local rc=$?
		# 0 misaligned of at least one frame of the runtime's checked
		if [ $rc -ne 0 ] || ! grep -q '^misaligned 0 of [1-9]' "$T/out"; then
			notok "$cc: $name: 20 threads, $first (status $rc)"
			diag_file "$T/out"
			diag_file "$T/err"
			return
		fi
		ok "$cc: $name: 20 threads, $first, runtime frames aligned ($(sed -n 's/^misaligned 0 of //p' "$T/out"))"
	}
	rec "function_graph (x86-64: the shortcut)" -- -T function_graph
	rec "function_graph, slow path (time filter)" -- -t 1ns
	rec "function_graph, per-ops route and return hook" DYNFTRACE_GRAPH_SHORTCUT=0 --
	rec "function" -- -T function
	rec "profile" -- -T profile
	# every call is in the trace: 20 threads x (1 + 50 x 3) calls of sa_leaf
	rm -rf "$T/d"
	"$B/dynftrace" record -d "$T/d" -- "$T/sa-$cc" threads 20 >/dev/null 2>&1
	n=$("$B/dynftrace" replay -d "$T/d" 2>/dev/null | grep -c 'sa_leaf();')
	check $([ "$n" -eq 3020 ]; echo $?) "$cc: replay shows all 3020 calls of sa_leaf ($n)"
done
tap_end
