#!/usr/bin/env bash
# description: filters that name the object: FUNC@OBJECT and FUNC:mod:OBJECT select a function of one object only
# config: asan
#
# tests/objfilter: a program and a library (both built with entry sites)
# each have a static twin(); the program calls its own 3 times and the
# library's 5 times (through lib_run). Recorded with -F/-N globs that name
# the object (by file name, a glob of it, or the name up to ".so"), the
# replay must hold exactly the twin() calls of that object. (The control
# files' filters go through the same matching: lib/core/ops.c.) Env: TOP B
# CC SAN.
. "$(dirname "$0")/../gen/common.sh"
S=$TOP/tests/objfilter
# LD_PRELOAD puts libdynftrace.so before libasan (see golden.sh).
[ "$SAN" = asan ] && export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
DFT=$B/dynftrace
if ! $CC $CFLAGS_T $SANFLAGS $TRACE_FLAGS -fPIC -shared "$S/twin_lib.c" -o "$T/libtwin.so" 2>"$T/build.log" ||
	! cc_prog "$T/twins" $TRACE_FLAGS "$S/twin_main.c" -L"$T" -ltwin -Wl,-rpath,"$T" 2>>"$T/build.log"; then
	notok "build the twin program and library"
	diag_file "$T/build.log"
	tap_end
	exit 1
fi
want=$("$T/twins")
# rec WANT_TWINS WANT_LIBRUN DESCRIPTION RECORD-OPTS...
rec() {
	local wt=$1 wl=$2 what=$3
	shift 3
	rm -rf "$T/d"
	local out
	out=$("$DFT" record -d "$T/d" "$@" -- "$T/twins" 2>"$T/err")
	local rc=$?
	"$DFT" replay -d "$T/d" >"$T/replay" 2>&1
	local nt nl
	nt=$(grep -c 'twin();' "$T/replay")
	nl=$(grep -c 'lib_run()' "$T/replay")
	if [ $rc -eq 0 ] && [ "$out" = "$want" ] && [ "$nt" -eq "$wt" ] && [ "$nl" -eq "$wl" ]; then
		ok "$what: $wt twin() calls, $wl lib_run"
	else
		notok "$what: $nt twin() calls (want $wt), $nl lib_run (want $wl), status $rc"
		diag_file "$T/err"
		diag_file "$T/replay"
	fi
}
rec 8 1 "no filter"
rec 8 0 "-F twin (every object)" -F twin
rec 5 0 "-F twin@libtwin.so" -F twin@libtwin.so
rec 5 0 "-F 'twin@libtw*' (a glob of the file name)" -F 'twin@libtw*'
rec 5 0 "-F twin@libtwin (the name up to .so)" -F twin@libtwin
rec 3 0 "-F twin@twins (the program)" -F twin@twins
rec 5 0 "-F twin:mod:libtwin (the kernel's form)" -F twin:mod:libtwin
rec 5 1 "-F @libtwin (every function of the library)" -F @libtwin
rec 3 0 "-F twin -N twin@libtwin" -F twin -N twin@libtwin
rec 0 0 "-F twin@nosuchlib: nothing" -F twin@nosuchlib -F main@nosuchlib
# A pattern that matched no function is reported, once, naming the option.
if grep -q "warning: -F 'twin@nosuchlib' matched no function" "$T/err" &&
	grep -q "warning: -F 'main@nosuchlib' matched no function" "$T/err" &&
	[ "$(grep -c 'matched no function' "$T/err")" -eq 2 ]; then
	ok "the two -F patterns that matched nothing are reported"
else
	notok "the unmatched -F patterns are reported"
	diag_file "$T/err"
fi
rec 3 0 "-F twin -N twin@libtwin -N nosuch_n -T 'nosuch_t*@depth=1'" -F twin -N twin@libtwin \
	-N nosuch_n -T 'nosuch_t*@depth=1'
if grep -q "warning: -N 'nosuch_n' matched no function" "$T/err" &&
	grep -q "warning: -T 'nosuch_t\*' matched no function" "$T/err" &&
	[ "$(grep -c 'matched no function' "$T/err")" -eq 2 ]; then
	ok "unmatched -N and -T patterns are reported, the matching ones are not"
else
	notok "unmatched -N and -T patterns are reported, the matching ones are not"
	diag_file "$T/err"
fi
# the control file takes the same forms
if [ -z "$SAN" ]; then
	rm -rf "$T/d"
	F=$(mktemp -d)
	mkdir -m 0700 "$F/run"
	out=$(XDG_RUNTIME_DIR=$F/run "$DFT" record -d "$T/d" --disabled -- sh -c '
		"$1" & p=$!; wait $p' sh "$T/twins" 2>&1)
	rm -rf "$F"
fi
tap_end
