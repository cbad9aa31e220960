# Sourced by the shell tests (tests/sh/*.sh) that build their own traced
# programs. Provides:
#   TOP B CC SAN   from the environment (defaults: this checkout, build/, gcc)
#   T              a temporary directory, removed on exit
#   SANFLAGS       the compiler flags of configuration SAN (empty, asan, tsan)
#   TRACE_FLAGS    -fpatchable-function-entry=5
#   ok/notok/skip/check   TAP output (numbered); tap_end prints nothing
#                  but returns the exit status
#   cc_prog OUT SRC...     build a program with SANFLAGS, linked with the
#                  runtime in $B (-ldynftrace, rpath), pthread, dl
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
TRACE_FLAGS="-fpatchable-function-entry=5"
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
