#!/usr/bin/env bash
# description: golden traces of tests/golden/s-* (record + replay) across gcc/clang x -O0/-O2
# config: asan
#
# Each tests/golden/s-NAME.c (s-NAME.cc: C++) is built with the trace flags
# by gcc and clang at -O0 and -O2, recorded with `dynftrace record`, and its
# `dynftrace replay --no-time` output, thread ids renamed T1, T2... in order
# of appearance, is compared with the expected trace:
#   tests/golden/s-NAME.CC-OPT.expect   (e.g. s-basic.clang-O2.expect), else
#   tests/golden/s-NAME.CC.expect, else
#   tests/golden/s-NAME.expect
# Programs run without being linked with the runtime: record preloads it.
# s-sleep is also checked to last at least its 20 ms, and s-longjmp to be
# read by babeltrace2 with its exit_depth event (when installed). Needs the
# runtime's tracers: SKIPs when recording yields no stream. In the asan
# configuration the programs are built with ASan as well (TSan: skipped).
#
# GOLDEN_UPDATE=1 writes the outputs of gcc -O0 to s-NAME.expect instead of
# comparing (read them before committing!). GOLDEN_ONLY=NAME runs one test.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
G=$TOP/tests/golden
DFT=$B/dynftrace

HIDE=
case "$SAN" in
asan)
	# The programs are instrumented too (the preloaded runtime needs the
	# ASan runtime in the process). LD_PRELOAD puts libdynftrace.so before
	# libasan: tell ASan that is fine. Its module constructors and
	# destructors are traced functions of the program: hide them.
	export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
	HIDE="-N _sub_I_*,_sub_D_*,asan.module_*"
	;;
tsan)
	skip "golden traces: TSan cannot be preloaded behind LD_PRELOAD"
	exit 0
	;;
esac

# normalize < replay: thread ids -> T1, T2, ... in order of appearance
normalize() {
	awk '{
		if (match($0, /^\[ *[0-9]+\]/)) {
			t = substr($0, RSTART + 1, RLENGTH - 2) + 0
			if (!(t in m)) m[t] = "T" (++n)
			$0 = "[" m[t] "]" substr($0, RLENGTH + 1)
		}
		print
	}'
}

# build CC CXX OPT DIR: every program into DIR; 0 or 1 (log in DIR/build.log)
build() {
	local cc=$1 cxx=$2 opt=$3 d=$4 f n
	local fl="$opt -g -fpatchable-function-entry=5 -D_GNU_SOURCE -I$G -Wall $SANFLAGS"
	mkdir -p "$d"
	: >"$d/build.log"
	$cc $fl -fPIC -shared "$G/dlopen-lib.c" -o "$d/libgolden-dl.so" >>"$d/build.log" 2>&1 || return 1
	$cc $fl "$G/exec-child.c" -o "$d/exec-child" >>"$d/build.log" 2>&1 || return 1
	for f in "$G"/s-*.c; do
		n=$(basename "$f" .c)
		$cc $fl -std=gnu11 "$f" -o "$d/$n" -lpthread -ldl >>"$d/build.log" 2>&1 || return 1
	done
	if [ -n "$cxx" ]; then
		for f in "$G"/s-*.cc; do
			n=$(basename "$f" .cc)
			$cxx $fl "$f" -o "$d/$n" >>"$d/build.log" 2>&1 || return 1
		done
	fi
	return 0
}

# Does the runtime record at all? (the tracers may not be there yet)
probe=$T/probe
if ! build gcc g++ -O0 "$probe" || ! (cd "$probe" && "$DFT" record -d "$probe/d" ./s-basic \
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
	tests+=("$n")
done

compilers="gcc clang"
# An instrumented program must use the ASan runtime of the compiler that
# built libdynftrace.so.
[ "$SAN" = asan ] && compilers=$CC
for cc in $compilers; do
	case $cc in
	gcc) cxx=g++ ;;
	clang) cxx=clang++ ;;
	esac
	if ! command -v $cc >/dev/null; then
		skip "$cc is not installed"
		continue
	fi
	command -v $cxx >/dev/null || cxx=
	for opt in -O0 -O2; do
		[ -n "${GOLDEN_UPDATE:-}" ] && { [ $cc != gcc ] || [ $opt != -O0 ]; } && continue
		d=$T/$cc$opt
		if ! build $cc "$cxx" $opt "$d"; then
			notok "build the golden programs with $cc $opt"
			diag_file "$d/build.log"
			continue
		fi
		for n in "${tests[@]}"; do
			if [ ! -x "$d/$n" ]; then
				skip "$n ($cc $opt): no C++ compiler"
				continue
			fi
			case "$SAN:$n" in
			asan:s-fork | asan:s-forkexec)
				# gcc 12's ASan allocator can deadlock in the child of a
				# multi-threaded fork (the runtime's consumer thread makes
				# every traced program multi-threaded); the default
				# configuration runs these.
				skip "$n ($cc $opt): ASan deadlocks in forked children of threaded programs"
				continue
				;;
			esac
			rm -rf "$d/data"
			(cd "$d" && "$DFT" record -d "$d/data" "./$n" >"$d/$n.out" 2>"$d/$n.err")
			rc=$?
			if [ $rc -ne 0 ]; then
				notok "$n ($cc $opt): record exited with $rc"
				diag_file "$d/$n.err"
				continue
			fi
			"$DFT" replay -d "$d/data" --no-time $HIDE >"$d/$n.raw" 2>"$d/$n.rerr"
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
				notok "$n ($cc $opt): no expected trace in tests/golden"
				diag_file "$d/$n.got" 40
				continue
			fi
			if [ $rc -ne 0 ]; then
				notok "$n ($cc $opt): replay exited with $rc"
				diag_file "$d/$n.rerr"
				continue
			fi
			if diff -u "$exp" "$d/$n.got" >"$d/$n.diff"; then
				ok "$n ($cc $opt)"
			else
				notok "$n ($cc $opt): replay differs from ${exp#$TOP/}"
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
			if [ "$n" = s-sleep ]; then
				# nap() sleeps 20 ms: its line must say so
				line=$("$DFT" replay -d "$d/data" | grep 'nap();')
				ms=$(echo "$line" | awk '$2 == "ms" { print int($1) }')
				if [ -n "$ms" ] && [ "$ms" -ge 20 ] && [ "$ms" -lt 2000 ]; then
					ok "s-sleep ($cc $opt): nap() lasted $ms ms"
				else
					notok "s-sleep ($cc $opt): nap() should last 20 ms or more: '$line'"
				fi
			fi
			if [ "$n" = s-longjmp ] && command -v babeltrace2 >/dev/null; then
				# the three frames longjmp left are one exit_depth event,
				# which babeltrace2 reads with the metadata's declaration
				if babeltrace2 "$d/data/ctf" >"$d/bt.out" 2>"$d/bt.err" &&
					grep -q 'exit_depth: .*{ depth = 3 }' "$d/bt.out"; then
					ok "s-longjmp ($cc $opt): babeltrace2 reads exit_depth 3"
				else
					notok "s-longjmp ($cc $opt): babeltrace2 should show one exit_depth of 3"
					diag_file "$d/bt.err"
					diag_file "$d/bt.out"
				fi
			fi
		done
	done
done
tap_end
