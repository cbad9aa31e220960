#!/usr/bin/env bash
# description: golden traces of tests/golden/s-* (record + replay) across gcc/clang x -O0/-O2 and the site build modes
# config: asan
# timeout: 2700
#
# Each tests/golden/s-NAME.c (s-NAME.cc: C++) is built with the trace flags
# by gcc and clang at -O0 and -O2, and at -O2 in the other site build modes
# (prefix pad, CALL_OPS, CET, fentry calls and NOPs: default configuration
# only), recorded with `dynftrace record`, and its
# `dynftrace replay --no-time` output, thread ids renamed T1, T2... in order
# of appearance, is compared with the expected trace:
#   tests/golden/s-NAME.CC-OPT.expect   (e.g. s-basic.clang-O2.expect), else
#   tests/golden/s-NAME.CC.expect, else
#   tests/golden/s-NAME.expect
# Programs run without being linked with the runtime: record preloads it.
# s-tailcall is checked to hold its tail jumps at -O2 (objdump), s-sleep
# to last at least its 20 ms, and s-longjmp and s-swapcontext to be
# read by babeltrace2 with their exit_depth and ctx_switch events (when
# installed). Needs the
# runtime's tracers: SKIPs when recording yields no stream. In the asan
# configuration the programs are built with ASan as well (TSan: skipped).
#
# tests/golden/s-NAME.opts holds more options for its record (a filter,
# a trigger), s-NAME.ropts for its replay (shell words, quoted as in a
# shell).
#
# GOLDEN_UPDATE=1 writes the outputs of gcc -O0 to s-NAME.expect instead of
# comparing (read them before committing!). GOLDEN_ONLY=NAME runs one test.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
G=$TOP/tests/golden
DFT=$B/dynftrace

if [ "$SAN" = tsan ]; then
	skip "golden traces: TSan cannot be preloaded behind LD_PRELOAD"
	exit 0
fi
record_san

# normalize < replay: thread ids -> T1, T2, ... in order of appearance;
# the process ids of the notes at the end ("# process 123 ended ...") -> P
normalize() {
	awk '{
		if (match($0, /^\[ *[0-9]+\]/)) {
			t = substr($0, RSTART + 1, RLENGTH - 2) + 0
			if (!(t in m)) m[t] = "T" (++n)
			$0 = "[" m[t] "]" substr($0, RLENGTH + 1)
		} else if ($0 ~ /^# process [0-9]+ /) {
			sub(/^# process [0-9]+ /, "# process P ")
		}
		print
	}'
}

# settle EXE DIR: record returns when its program does; a process the
# program left running (daemon()'s child) writes its stream when it ends:
# wait (30 s at most) until no process runs EXE, then until every started
# process flushed or was accounted for.
settle() {
	local i p e
	for i in $(seq 300); do
		p=
		for e in /proc/[0-9]*/exe; do
			[ "$(readlink "$e" 2>/dev/null)" = "$1" ] && p=1 && break
		done
		if [ -z "$p" ]; then
			for p in $(sed -n 's/^started: \([0-9.]*\) .*/\1/p' "$2/info" 2>/dev/null); do
				grep -qE "^(flushed|signal|unflushed|salvaged): ${p%%.*}( |\$|\.)" "$2/info" || break
				p=
			done
			[ -z "$p" ] && return 0
		fi
		sleep 0.1
	done
}

# mode_flags MODE: compile flags CF, link flags LF and the dlopen'd
# library's compile flags LIBCF of a site build mode (the core runtime's
# build matrix: patchable entry, with a prefix pad, CALL_OPS, CET, fentry
# calls, fentry NOPs)
mode_flags() {
	LF= LIBCF=
	case $1 in
	patch) CF=$TRACE_FLAGS ;;
	pad) CF="-fpatchable-function-entry=7,2" ;;
	callops) CF=$("$DFT" cflags --call-ops) ;;
	cet) CF="-fpatchable-function-entry=5 -fcf-protection=full" ;;
	fentry) CF="-pg -mfentry -mrecord-mcount" ;;
	nop)
		# -mnop-mcount needs non-PIE code; the PIC library keeps its calls
		CF="-pg -mfentry -mrecord-mcount -mnop-mcount -fno-pie" LF=-no-pie
		LIBCF="-pg -mfentry -mrecord-mcount"
		;;
	esac
	LIBCF=${LIBCF:-$CF}
}

# build CC CXX OPT DIR [MODE]: every program into DIR, compiled and linked
# apart (fentry code links without -pg); 0 or 1 (log in DIR/build.log)
build() {
	local cc=$1 cxx=$2 opt=$3 d=$4 f n
	mode_flags "${5:-patch}"
	local fl="$opt -g -D_GNU_SOURCE -I$G -Wall $SANFLAGS"
	mkdir -p "$d"
	: >"$d/build.log"
	# shellcheck disable=SC2086
	{
		$cc $fl $LIBCF -fPIC -shared "$G/dlopen-lib.c" -o "$d/libgolden-dl.so" &&
			$cc $fl $CF -c "$G/exec-child.c" -o "$d/exec-child.o" &&
			$cc $fl $LF "$d/exec-child.o" -o "$d/exec-child"
	} >>"$d/build.log" 2>&1 || return 1
	for f in "$G"/s-*.c; do
		n=$(basename "$f" .c)
		chosen "$n" || continue
		# shellcheck disable=SC2086
		{
			$cc $fl $CF -std=gnu11 -c "$f" -o "$d/$n.o" &&
				$cc $fl $LF "$d/$n.o" -o "$d/$n" -lpthread -ldl
		} >>"$d/build.log" 2>&1 || return 1
	done
	if [ -n "$cxx" ]; then
		for f in "$G"/s-*.cc; do
			n=$(basename "$f" .cc)
			chosen "$n" || continue
			# shellcheck disable=SC2086
			{
				$cxx $fl $CF -c "$f" -o "$d/$n.o" && $cxx $fl $LF "$d/$n.o" -o "$d/$n"
			} >>"$d/build.log" 2>&1 || return 1
		done
	fi
	return 0
}

# The compilers by the name the expected traces use (s-NAME.gcc.expect):
# for another ARCH "gcc" is its cross compiler, alone.
cc_gcc=gcc cxx_gcc=g++
# objdump and the tail jump's mnemonic (s-tailcall) for ARCH
objdump=objdump jump=jmp
if [ "$ARCH" != x86_64 ]; then
	cc_gcc=$CC cxx_gcc=${CC%gcc}g++ objdump=${CC%gcc}objdump
fi
case $ARCH in
aarch64) jump='\tb\t' ;;
riscv64) jump='\tj\t' ;;
esac
# The programs run: all, or GOLDEN_TESTS (names). Under emulation (another
# ARCH) a chosen dozen by default, within the cross run's time: the return
# hook on recursion, tail calls, threads, longjmp, the three context
# switches, a signal handler, C++ exceptions (s-exception-deep: the return
# addresses an unwinder reads where a function saved its link register),
# dlopen, exit paths and two triggers. Not s-fork, s-forkexec, s-daemon:
# qemu-user 7.2 aborts in the child of a forked threaded process.
if [ "$ARCH" != x86_64 ]; then
	GOLDEN_TESTS=${GOLDEN_TESTS:-s-basic s-recursion s-tailcall s-threads s-longjmp s-swapcontext
		s-setcontext s-signal s-exception s-exception-deep s-dlopen s-exit s-pthread-exit s-trig-filter s-trig-depth}
fi
chosen() {
	[ -z "${GOLDEN_TESTS:-}" ] || [[ " ${GOLDEN_TESTS//[$'\t\n']/ } " == *" $1 "* ]]
}
# Does the runtime record at all? (the tracers may not be there yet)
probe=$T/probe
if ! build $cc_gcc "$(command -v $cxx_gcc)" -O0 "$probe" || ! (cd "$probe" && "$DFT" record -d "$probe/d" ./s-basic \
	>/dev/null 2>&1) || ! ls "$probe"/d/ctf/stream-* >/dev/null 2>&1; then
	skip "the runtime does not record yet (no ctf/stream-* after 'dynftrace record s-basic')"
	exit 0
fi

tests=()
for f in "$G"/s-*.c "$G"/s-*.cc; do
	n=$(basename "$f")
	n=${n%.c}
	n=${n%.cc}
	[ -n "${GOLDEN_ONLY:-}" ] && [ "$n" != "$GOLDEN_ONLY" ] && continue
	chosen "$n" || continue
	tests+=("$n")
done

# Variants "CC OPT MODE": both compilers at -O0 and -O2 with the default
# sites; in the default configuration also the other site build modes at
# -O2 (fentry is gcc's only).
variants=()
compilers="gcc clang"
# An instrumented program must use the ASan runtime of the compiler that
# built libdynftrace.so.
[ "$SAN" = asan ] && compilers=$CC
for cc in $compilers; do
	variants+=("$cc -O0 patch" "$cc -O2 patch")
done
if [ -z "$SAN" ] && [ -z "${GOLDEN_UPDATE:-}" ]; then
	variants+=("gcc -O2 pad" "gcc -O2 callops" "gcc -O2 cet" "gcc -O2 fentry" "gcc -O2 nop"
		"clang -O2 pad" "clang -O2 callops" "clang -O2 cet")
fi
# Under emulation (another ARCH): the cross gcc at -O2 with CALL_OPS sites
# (GOLDEN_VARIANTS overrides, e.g. "gcc:-O0:patch gcc:-O2:patch"), within
# the time a cross run allows; pad, CET, fentry and NOPs are x86-64 modes.
if [ "$ARCH" != x86_64 ]; then
	read -r -a variants <<<"${GOLDEN_VARIANTS:-gcc:-O2:callops}"
	variants=("${variants[@]//:/ }")
fi
for v in "${variants[@]}"; do
	read -r cc opt mode <<<"$v"
	ccx=$cc
	case $cc in
	gcc) cxx=$cxx_gcc ccx=$cc_gcc ;;
	clang) cxx=clang++ ;;
	esac
	if ! command -v $ccx >/dev/null; then
		skip "$cc is not installed"
		continue
	fi
	command -v $cxx >/dev/null || cxx=
	# the name shown: "gcc -O2", or "gcc -O2 callops" for another mode
	m=
	[ "$mode" != patch ] && m=" $mode"
	{
		[ -n "${GOLDEN_UPDATE:-}" ] && { [ $cc != gcc ] || [ $opt != -O0 ]; } && continue
		d=$T/$cc$opt
		if ! build $ccx "$cxx" $opt "$d" "$mode"; then
			notok "build the golden programs with $cc $opt$m"
			diag_file "$d/build.log"
			continue
		fi
		for n in "${tests[@]}"; do
			if [ ! -x "$d/$n" ]; then
				skip "$n ($cc $opt$m): no C++ compiler"
				continue
			fi
			case "$ARCH:$n" in
			x86_64:*) ;;
			*:s-args)
				skip "$n ($cc $opt$m): its string arguments are read with process_vm_readv, which qemu-user 7.2 does not emulate (ENOSYS)"
				continue
				;;
			esac
			case "$SAN:$n" in
			asan:s-fork | asan:s-forkexec | asan:s-daemon)
				# gcc 12's ASan allocator can deadlock in the child of a
				# multi-threaded fork (the runtime's consumer thread makes
				# every traced program multi-threaded); the default
				# configuration runs these.
				skip "$n ($cc $opt$m): ASan deadlocks in forked children of threaded programs"
				continue
				;;
			esac
			rm -rf "$d/data"
			# s-NAME.opts / s-NAME.ropts: more options of record / replay
			# (shell words, quotes allowed)
			ropts=() popts=()
			[ -f "$G/$n.opts" ] && eval "ropts=($(cat "$G/$n.opts"))"
			[ -f "$G/$n.ropts" ] && eval "popts=($(cat "$G/$n.ropts"))"
			(cd "$d" && "$DFT" record -d "$d/data" "${ropts[@]}" "./$n" >"$d/$n.out" 2>"$d/$n.err")
			rc=$?
			settle "$d/$n" "$d/data"
			if [ $rc -ne 0 ]; then
				notok "$n ($cc $opt$m): record exited with $rc"
				diag_file "$d/$n.err"
				continue
			fi
			"$DFT" replay -d "$d/data" --no-time $HIDE "${popts[@]}" >"$d/$n.raw" 2>"$d/$n.rerr"
			rc=$?
			normalize <"$d/$n.raw" >"$d/$n.got"
			if [ -n "${GOLDEN_UPDATE:-}" ]; then
				cp "$d/$n.got" "$G/$n.expect"
				ok "$n: wrote tests/golden/$n.expect"
				continue
			fi
			exp=
			for e in "$G/$n.$cc$opt.expect" "$G/$n.$cc.expect" "$G/$n.expect"; do
				if [ -f "$e" ]; then
					exp=$e
					break
				fi
			done
			if [ -z "$exp" ]; then
				notok "$n ($cc $opt$m): no expected trace in tests/golden"
				diag_file "$d/$n.got" 40
				continue
			fi
			if [ $rc -ne 0 ]; then
				notok "$n ($cc $opt$m): replay exited with $rc"
				diag_file "$d/$n.rerr"
				continue
			fi
			if diff -u "$exp" "$d/$n.got" >"$d/$n.diff"; then
				ok "$n ($cc $opt$m)"
			else
				notok "$n ($cc $opt$m): replay differs from ${exp#$TOP/}"
				diag_file "$d/$n.diff" 40
				# An exec'd image has its own sites (sites-PID.K.txt): its
				# streams must be named stream-PID.K-TID to be read with them.
				for f in "$d"/data/sites-*.*.txt; do
					[ -f "$f" ] || continue
					k=${f##*/sites-}
					k=${k%.txt}
					ls "$d/data/ctf/stream-$k-"* >/dev/null 2>&1 ||
						echo "# image $k has sites but no stream-$k-* file: its events went to a stream named after the pid alone"
				done
			fi
			if [ "$n" = s-tailcall ] && [ "$opt" = -O2 ] && command -v $objdump >/dev/null; then
				# The case under test is there only if the compiler made
				# every `return f(...)` a jump: count them.
				jumps=$($objdump -d --no-show-raw-insn "$d/$n" | awk -v j="$jump" '
					/^[0-9a-f]+ <.*>:$/ { f = $2 }
					$0 ~ j && /<(leafb|chain[23]|t_even|t_odd|untraced)>/ &&
					    f ~ /<(tailer|chain[123]|t_even|t_odd|untraced|to_untraced)>:/ { k[f] = 1 }
					END { print length(k) }')
				if [ "$jumps" -ge 8 ]; then
					ok "s-tailcall ($cc $opt$m): 8 functions end in a tail jump"
				else
					notok "s-tailcall ($cc $opt$m): $jumps of 8 functions end in a tail jump"
				fi
			fi
			if [ "$n" = s-sleep ]; then
				# nap() sleeps 20 ms: its line must say so
				line=$("$DFT" replay -d "$d/data" | grep 'nap();')
				ms=$(echo "$line" | awk '$2 == "ms" { print int($1) }')
				if [ -n "$ms" ] && [ "$ms" -ge 20 ] && [ "$ms" -lt 2000 ]; then
					ok "s-sleep ($cc $opt$m): nap() lasted $ms ms"
				else
					notok "s-sleep ($cc $opt$m): nap() should last 20 ms or more: '$line'"
				fi
			fi
			if [ "$n" = s-longjmp ] && command -v babeltrace2 >/dev/null; then
				# the three frames longjmp left are one exit_depth event,
				# which babeltrace2 reads with the metadata's declaration
				if babeltrace2 "$d/data/ctf" >"$d/bt.out" 2>"$d/bt.err" &&
					grep -q 'exit_depth: .*{ depth = 3 }' "$d/bt.out"; then
					ok "s-longjmp ($cc $opt$m): babeltrace2 reads exit_depth 3"
				else
					notok "s-longjmp ($cc $opt$m): babeltrace2 should show one exit_depth of 3"
					diag_file "$d/bt.err"
					diag_file "$d/bt.out"
				fi
			fi
			if [ "$n" = s-swapcontext ] && command -v babeltrace2 >/dev/null; then
				# main() and next() set aside when the generator starts:
				# one ctx_switch, read with the metadata's declaration
				if babeltrace2 "$d/data/ctf" >"$d/bt.out" 2>"$d/bt.err" &&
					grep -q 'ctx_switch: .*{ depth = 2, from = 0, to = 1 }' "$d/bt.out"; then
					ok "s-swapcontext ($cc $opt$m): babeltrace2 reads ctx_switch 2, 0 -> 1"
				else
					notok "s-swapcontext ($cc $opt$m): babeltrace2 should show ctx_switch depth 2 from 0 to 1"
					diag_file "$d/bt.err"
					diag_file "$d/bt.out"
				fi
			fi
		done
	}
done
tap_end
