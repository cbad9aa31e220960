#!/usr/bin/env bash
# Runs every dynftrace test and prints "N passed, N failed" last.
#
# Tests speak TAP. Two kinds:
#   tests/unit/NAME.c  built by make into $B/tests/NAME (traced, linked with
#                      the runtime), run as is;
#   tests/sh/NAME.sh   shell tests; first line after the shebang is
#                      "# description: ...". They get TOP (checkout), B (build
#                      dir), CC; they print TAP lines themselves.
# Each configuration (default, asan, tsan) reruns the tests listed for it.
# Usage: tests/run.sh [-k PATTERN] [--quick]   (quick: default config only)
#
# ARCH=aarch64 or riscv64 (make check ARCH=...): cross-built into
# build-ARCH/, the unit tests run under qemu-user (qemu-ARCH -L
# /usr/ARCH-linux-gnu),
# default configuration only (no sanitizer runtime under emulation), with
# DFT_TEST_EMULATED=1 and DFT_TEST_SLOW (stress loops shortened, same
# checks). A unit test that cannot run under emulation says so in its
# source: a line "// cross-skip: ARCH: reason". The shell tests run too,
# with CC=ARCH-linux-gnu-gcc, B=build-ARCH and ARCH (tests/gen/common.sh),
# guest programs executed through binfmt_misc (tests/cross/binfmt.bash),
# except those in tests/cross/sh-skip, each with its reason.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
# A cross run re-runs itself in its own user and mount namespaces where the
# kernel gives them a private binfmt_misc (tests/cross/binfmt.bash).
if [ "${ARCH:-x86_64}" != x86_64 ] && [ -z "${BINFMT_PRIVATE:-}" ]; then
	if unshare -U -r -m sh -c 'mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc' 2>/dev/null; then
		exec unshare -U -r -m env BINFMT_PRIVATE=1 "$TOP/tests/run.sh" "$@"
	fi
	export BINFMT_PRIVATE=0
fi
pattern=""
quick=0
while [ $# -gt 0 ]; do
	case "$1" in
	-k) pattern=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
JOBS=${JOBS:-2}
ARCH=${ARCH:-x86_64}
RUN=()
SUFFIX=""
if [ "$ARCH" != x86_64 ]; then
	RUN=(qemu-"$ARCH" -L /usr/"$ARCH"-linux-gnu)
	SUFFIX=-$ARCH
	quick=1
	export DFT_TEST_EMULATED=1 DFT_TEST_SLOW=${DFT_TEST_SLOW:-20}
fi
passed=0
failed=0
skipped=0
TEST_TIMEOUT_SET=${TEST_TIMEOUT:-}
failed_names=()
LOG=$TOP/build$SUFFIX/test-logs
mkdir -p "$LOG"

# run_tap NAME CMD...: runs CMD, counts its TAP lines.
run_tap() {
	local name=$1; shift
	local out="$LOG/${name//\//_}.log"
	local t0=$(date +%s)
	timeout -k 10 "${TEST_TIMEOUT:-900}" "$@" >"$out" 2>&1
	local rc=$?
	local p f
	p=$(grep -cE '^ok ' "$out")
	f=$(grep -cE '^not ok ' "$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		# crashed or exited non-zero without saying which check failed
		f=1
		echo "not ok - $name exited with status $rc" >>"$out"
	fi
	if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		f=1
		echo "not ok - $name printed no test result" >>"$out"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	local t1=$(date +%s)
	if [ "$f" -gt 0 ]; then
		failed_names+=("$name")
		echo "FAIL $name ($p passed, $f failed, $((t1 - t0))s) - log: $out"
		grep -E '^not ok|^#' "$out" | head -20 | sed 's/^/    /'
	else
		echo "PASS $name ($p checks, $((t1 - t0))s)"
	fi
}

# run_config NAME SAN: builds with SAN and runs the tests that apply.
run_config() {
	local cfg=$1 san=$2
	local b=build$SUFFIX
	[ -n "$san" ] && b=build-$san
	echo "== configuration: $cfg ($ARCH)"
	if ! make -s -j"$JOBS" ARCH="$ARCH" SAN="$san" all >"$LOG/build-$cfg.log" 2>&1; then
		echo "FAIL build ($cfg) - log: $LOG/build-$cfg.log"
		tail -30 "$LOG/build-$cfg.log" | sed 's/^/    /'
		failed=$((failed + 1))
		failed_names+=("build-$cfg")
		return
	fi
	passed=$((passed + 1))
	echo "PASS build ($cfg)"
	local t
	for t in "$b"/tests/*; do
		[ -x "$t" ] || continue
		local n=$(basename "$t")
		[ -n "$pattern" ] && [[ "$n" != *$pattern* ]] && continue
		# Tests opt out of a configuration with a line "// config: !tsan".
		grep -q "config:.*!$cfg" "tests/unit/$n.c" 2>/dev/null && continue
		local why
		why=$(sed -n "s|^// cross-skip: $ARCH: ||p" "tests/unit/$n.c" 2>/dev/null | head -1)
		if [ ${#RUN[@]} -gt 0 ] && [ -n "$why" ]; then
			echo "SKIP $cfg/$n: $why"
			skipped=$((skipped + 1))
			continue
		fi
		run_tap "$cfg/$n" env DYNFTRACE_TEST_CONFIG="$cfg" "${RUN[@]}" "$t"
	done
	if [ ${#RUN[@]} -gt 0 ]; then
		# CALL_OPS and the per-ops routes, site by site (routes-info.sh's
		# program), built with the flags the cross-built command prints.
		local co="" cc="${CC_CROSS:-$ARCH-linux-gnu-gcc}" f="-O2 -g -D_GNU_SOURCE -Iinclude"
		if co=$("${RUN[@]}" "$b/dynftrace" cflags --call-ops) &&
			tf=$("${RUN[@]}" "$b/dynftrace" cflags) &&
			$cc $f $co -DPFX=co_ -c tests/routes/funcs.c -o "$b/tests/co.o" &&
			$cc $f $tf -DPFX=tr_ -c tests/routes/funcs.c -o "$b/tests/tr.o" &&
			$cc $f $tf tests/routes/info.c "$b/tests/co.o" \
				"$b/tests/tr.o" -L"$b" -ldynftrace -Wl,-rpath,'$ORIGIN/..' -lpthread \
				-o "$b/tests/routes-info" >"$LOG/build-routes-info.log" 2>&1; then
			run_tap "$cfg/routes-info ($co)" "${RUN[@]}" "$b/tests/routes-info"
		else
			echo "FAIL build routes-info - log: $LOG/build-routes-info.log"
			failed=$((failed + 1))
			failed_names+=("build-routes-info")
		fi
		# The tests written for an emulated architecture (tests/cross/).
		for t in tests/cross/*.sh; do
			local n=$(basename "$t" .sh)
			[ -n "$pattern" ] && [[ "$n" != *$pattern* ]] && continue
			run_tap "$cfg/cross-$n" env TOP="$TOP" B="$TOP/$b" ARCH="$ARCH" \
				RUN_CMD="${RUN[*]}" bash "$t"
		done
		run_cross_sh "$cfg" "$b"
		return
	fi
	for t in tests/sh/*.sh; do
		[ -f "$t" ] || continue
		local n=$(basename "$t" .sh)
		[ -n "$pattern" ] && [[ "$n" != *$pattern* ]] && continue
		grep -q "config:.*!$cfg" "$t" && continue
		if [ "$cfg" != default ] && ! grep -q "config:.*$cfg" "$t"; then continue; fi
		# "# timeout: S" in a test's header: its own limit (long suites),
		# still under TEST_TIMEOUT's control when that is set
		local lim
		lim=$(sed -n '2,8s/^# timeout: \([0-9]*\)$/\1/p' "$t" | head -1)
		TEST_TIMEOUT=${TEST_TIMEOUT_SET:-${lim:-900}} \
			run_tap "$cfg/$n" env TOP="$TOP" B="$TOP/$b" CC="${CC:-gcc}" SAN="$san" \
			DYNFTRACE_TEST_CONFIG="$cfg" bash "$t"
	done
}

# run_cross_sh CFG BUILD: the shell tests against the cross build, guest
# programs run through binfmt_misc; tests/cross/sh-skip names those that
# cannot run under qemu-user ("NAME ARCHES: reason"; ARCHES "*" or a list).
run_cross_sh() {
	local cfg=$1 b=$2 t n why
	. tests/cross/binfmt.bash
	binfmt_setup "$ARCH" "$b"
	for t in tests/sh/*.sh; do
		n=$(basename "$t" .sh)
		[ -n "$pattern" ] && [[ "$n" != *$pattern* ]] && continue
		why=$(awk -v n="$n" -v a="$ARCH" '$1 == n && ($2 == "*:" || index($2, a)) {
			sub(/^[^ ]+ [^ ]+ /, ""); print; exit }' tests/cross/sh-skip)
		[ -z "$why" ] && why=$BINFMT_WHY
		if [ -n "$why" ]; then
			echo "SKIP $cfg/$n: $why"
			skipped=$((skipped + 1))
			continue
		fi
		local lim
		lim=$(sed -n '2,8s/^# timeout: \([0-9]*\)$/\1/p' "$t" | head -1)
		TEST_TIMEOUT=${TEST_TIMEOUT_SET:-${lim:-900}} \
			run_tap "$cfg/$n" env TOP="$TOP" B="$TOP/$b" ARCH="$ARCH" \
			CC="${CC_CROSS:-$ARCH-linux-gnu-gcc}" SAN= DYNFTRACE_TEST_CONFIG="$cfg" bash "$t"
	done
	binfmt_cleanup
}

run_config default ""
if [ "$quick" -eq 0 ]; then
	run_config asan asan
	run_config tsan tsan
fi

echo
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed: ${failed_names[*]}"
fi
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
