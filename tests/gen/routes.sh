# Sourced after common.sh by the tests of tests/routes/ that link
# tests/routes/funcs.c (routes-free.sh, routes-info.sh, routes-load.sh).
# Provides:
#   R              tests/routes
#   CALLOPS        the flags of `dynftrace cflags --call-ops` (the test ends
#                  when the command fails)
#   build_funcs CC EXTRA...   funcs.c compiled twice with CC, SANFLAGS and
#                  EXTRA: $T/co.o with CALLOPS (co_*, sites with a CALL_OPS
#                  literal), $T/tr.o with the plain TRACE_FLAGS (tr_*)
R=$TOP/tests/routes
CALLOPS=$("$B/dynftrace" cflags --call-ops) || {
	echo "not ok 1 - dynftrace cflags --call-ops"
	exit 1
}

build_funcs() {
	local cc=$1
	shift
	# shellcheck disable=SC2086
	$cc $CFLAGS_T $SANFLAGS "$@" $CALLOPS -DPFX=co_ -c "$R/funcs.c" -o "$T/co.o" &&
		$cc $CFLAGS_T $SANFLAGS "$@" $TRACE_FLAGS -DPFX=tr_ -c "$R/funcs.c" -o "$T/tr.o"
}
