# Sourced by the shell tests (tests/sh/*.sh) that build their own traced
# programs. Provides:
#   TOP B CC SAN   from the environment (defaults: this checkout, build/, gcc)
#   ARCH           the architecture the programs are built for and run on
#                  (x86_64; aarch64 or riscv64 under qemu-user through
#                  binfmt_misc: tests/cross/sh.sh sets CC, B and ARCH)
#   T              a temporary directory, removed on exit
#   SANFLAGS       the compiler flags of configuration SAN (empty, asan, tsan)
#   TRACE_FLAGS    the site flags `dynftrace cflags` prints for ARCH
#   ok/notok/skip/check   TAP output (numbered); tap_end prints nothing
#                  but returns the exit status
#   cc_prog OUT SRC...     build a program with SANFLAGS, linked with the
#                  runtime in $B (-ldynftrace, rpath), pthread, dl
#   tap_prog [--diag] NAME CMD...  one TAP line for a TAP-speaking program
#   record_setup   DFT, cd to $T; ends the test unless SAN is empty or asan
#   cc_recorded OUT SRC    a traced program for record, in the current
#                  directory; ends the test when it does not build
#   record_san     HIDE and ASAN_OPTIONS for recording asan programs
#   recorded DIR ARGS...   `dynftrace record $HIDE -d DIR ARGS`, waited for:
#                  rpid, rc, and the traced pid and cpid (its first child)
#   compilers      $CC, and clang too when it is there (no sanitizer)
#   build_t_ring   $T/t-ring (tests/ring/t-ring.c with lib/ring/ring.c)
# A sanitizer report must not pass for an ordinary failure: ASan exits 99.
TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
B=${B:-$TOP/build}
CC=${CC:-gcc}
SAN=${SAN:-}
case "$SAN" in
asan) SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" ;;
tsan) SANFLAGS="-fsanitize=thread -fno-omit-frame-pointer" ;;
*) SANFLAGS="" ;;
esac
ARCH=${ARCH:-x86_64}
# the Makefile's TRACE_FLAGS for ARCH (what `dynftrace cflags` prints)
case "$ARCH" in
aarch64) TRACE_FLAGS="-fpatchable-function-entry=2" ;;
riscv64) TRACE_FLAGS="-fpatchable-function-entry=4 -falign-functions=4" ;;
*) TRACE_FLAGS="-fpatchable-function-entry=5" ;;
esac
# The runtime's header folders (its layers; see the Makefile), for tests that
# compile parts of it in.
LIB_INC="-iquote $TOP/lib -iquote $TOP/lib/core -iquote $TOP/lib/ring -iquote $TOP/lib/trace -iquote $TOP/lib/ctl -iquote $TOP/lib/arch/$ARCH"
CFLAGS_T="-std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -I$TOP/include"
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=98:print_stacktrace=1}

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

tap_n=0
tap_nfail=0
ok() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
notok() { tap_n=$((tap_n + 1)); tap_nfail=$((tap_nfail + 1)); echo "not ok $tap_n - $*"; }
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n # SKIP $*"; }
# check STATUS DESCRIPTION: ok when STATUS is 0
check() { if [ "$1" -eq 0 ]; then ok "$2"; else notok "$2"; fi; }
tap_end() { [ "$tap_nfail" -eq 0 ]; }
# diag_file FILE: its first lines as TAP comments
diag_file() { sed -e 's/^/# /' "$1" | head -${2:-20}; }

# cc_prog OUT SRC... [EXTRA FLAGS]: a program linked with the runtime.
cc_prog() {
	local out=$1
	shift
	$CC $CFLAGS_T $SANFLAGS "$@" -o "$out" -L"$B" -Wl,--no-as-needed -ldynftrace \
		-Wl,--as-needed -Wl,-rpath,"$B" -lpthread -ldl
}

# record_setup: for the end-to-end tests of `dynftrace record` ($DFT), run
# in $T, by the default and asan configurations only.
record_setup() {
	DFT=$B/dynftrace
	cd "$T" || exit 1
	if [ -n "$SAN" ] && [ "$SAN" != asan ]; then
		skip "end-to-end recording runs in the default and asan configurations only"
		exit 0
	fi
}

# cc_recorded OUT SRC: build the traced program OUT (SANFLAGS, pthread),
# errors in build.log; ends the test when it does not build.
cc_recorded() {
	# shellcheck disable=SC2086
	if ! $CC -O1 -g $TRACE_FLAGS $SANFLAGS "$2" -o "$1" -lpthread 2>build.log; then
		notok "build the test program"
		diag_file build.log
		exit 1
	fi
}

# record_san: under asan the recorded programs are instrumented too (the
# preloaded runtime needs the ASan runtime in the process); LD_PRELOAD puts
# libdynftrace.so before libasan: ASan is told that is fine. HIDE: the -N
# option of record or replay hiding the ASan module constructors and
# destructors, traced functions of the program (empty without asan).
record_san() {
	HIDE=
	if [ "$SAN" = asan ]; then
		export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
		HIDE="-N _sub_I_*,_sub_D_*,asan.module_*"
	fi
}

# recorded DIR ARGS...: `$DFT record $HIDE -d DIR ARGS...` (output in out
# and err), waited for. Sets rpid (the recorder: it names its buffer
# directory in /dev/shm), rc (its status), pid and cpid (the first two
# processes of the trace: the program and its first child).
recorded() {
	local d=$1
	shift
	# shellcheck disable=SC2086
	"$DFT" record $HIDE -d "$d" "$@" >out 2>err &
	rpid=$!
	wait $rpid
	rc=$?
	pid=$(sed -n 's/^pid: //p' "$d/info" | sed -n 1p)
	cpid=$(sed -n 's/^pid: //p' "$d/info" | sed -n 2p)
}

# tap_prog [--diag] NAME CMD...: run CMD, a program that prints TAP, and
# say one TAP line for it: ok when it exited 0 with checks and no failure,
# else its failures, comments, sanitizer reports and stderr as diagnostics.
# --diag: its comment lines are shown also when it passes.
tap_prog() {
	local diag=0
	if [ "$1" = --diag ]; then
		diag=1
		shift
	fi
	local name=$1
	shift
	"$@" >"$T/tap.out" 2>"$T/tap.err"
	local rc=$? p f
	p=$(grep -c '^ok ' "$T/tap.out")
	f=$(grep -c '^not ok ' "$T/tap.out")
	[ $diag -eq 1 ] && grep -E '^#' "$T/tap.out"
	if [ $rc -eq 0 ] && [ "$f" -eq 0 ] && [ "$p" -gt 0 ]; then
		ok "$name ($p checks)"
	else
		notok "$name: status $rc, $f of $((p + f)) checks failed"
		grep -E '^not ok|^#|ERROR|SUMMARY' "$T/tap.out" | head -30 | sed -e 's/^/# /'
		head -30 "$T/tap.err" | sed -e 's/^/# /'
	fi
}

# The compilers a test builds with: $CC, and clang when it is installed and
# no sanitizer is in use (the sanitizer runtimes are gcc's); the cross
# compiler alone for another ARCH.
compilers=$CC
if [ -z "$SAN" ] && [ "$ARCH" = x86_64 ] && command -v clang >/dev/null && [ "$CC" != clang ]; then
	compilers="$compilers clang"
fi

# build_t_ring: $T/t-ring, the ring's own test program (tests/ring/t-ring.c)
# with lib/ring/ring.c compiled in (it is hidden in the runtime); exits the test
# when it does not build.
build_t_ring() {
	local flags="$CFLAGS_T $LIB_INC -fno-strict-aliasing"
	# The readers' copies race with the writers by design (lib/ring/ring_read.c):
	# not instrumented under TSan, as in the runtime (Makefile).
	local rflags=$SANFLAGS
	[ "$SAN" = tsan ] && rflags=""
	# shellcheck disable=SC2086
	if ! $CC $flags $rflags -c "$TOP/lib/ring/ring_read.c" -o "$T/ring_read.o" 2>"$T/build.log" ||
		! $CC $flags $SANFLAGS "$TOP/lib/ring/ring.c" "$TOP/lib/ring/ring_salvage.c" "$TOP/lib/core/log.c" \
			"$TOP/lib/ring/clock.c" "$TOP/lib/ring/ctf.c" "$TOP/lib/ring/ring_flush.c" "$TOP/lib/ring/ring_fork.c" "$T/ring_read.o" "$TOP/lib/core/config.c" "$TOP/lib/core/threads.c" \
			"$TOP/tests/ring/t-ring.c" -o "$T/t-ring" -lpthread 2>>"$T/build.log"; then
		echo "not ok 1 - build t-ring"
		diag_file "$T/build.log"
		exit 1
	fi
	export T_RING_SAN=$SAN
}
