#!/usr/bin/env bash
# description: no thread runs a freed ops through a trampoline or a CALL_OPS literal; late entries
# config: asan
#
# tests/routes/free.c with tests/routes/funcs.c built with the flags of
# `dynftrace cflags --call-ops` (co_*) and the plain flags (tr_*): ops are
# malloc'd, registered, unregistered, poisoned and freed while threads call
# the traced functions, for each route mask; then a thread parked between a
# trampoline and the RCU read side (a deterministic late entry) must land in
# late_ops, a cleared literal or the list, never the freed ops. In the asan
# configuration any use of freed memory is a failure. Not under TSan: the
# CALL_OPS literal is published by patch.c, which is not instrumented there,
# so TSan cannot see the release that orders the ops' initialisation before
# its use through the literal and reports races on every fresh ops.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
. "$(dirname "$0")/../gen/routes.sh"
if ! { build_funcs "$CC" &&
	cc_prog "$T/free" "$R/free.c" "$T/co.o" "$T/tr.o"; } 2>"$T/build.log"; then
	echo "not ok 1 - build tests/routes/free.c"
	diag_file "$T/build.log"
	exit 1
fi
# The program's TAP output is this test's.
"$T/free"
