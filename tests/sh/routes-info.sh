#!/usr/bin/env bash
# description: site introspection shows each site's route, call target, CALL_OPS literal and ops
# config: asan tsan
#
# tests/routes/info.c with tests/routes/funcs.c built with the flags of
# `dynftrace cflags --call-ops` (co_*) and the plain flags (tr_*), for gcc,
# gcc -fcf-protection=full (endbr64 before the site), and clang (both ways)
# when installed; then with DYNFTRACE_ROUTES=list|tramp|callops|all setting
# the initial mask. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
. "$(dirname "$0")/../gen/routes.sh"

# build OUT CC EXTRA...: the info program
build() {
	local out=$1 cc=$2
	shift 2
	build_funcs "$cc" "$@" && CC=$cc cc_prog "$out" "$R/info.c" "$T/co.o" "$T/tr.o" "$@"
}

variants="$CC|"
# CET and clang: x86-64 (another ARCH: its cross gcc alone)
if [ -z "$SAN" ] && [ "$ARCH" = x86_64 ]; then
	variants="$variants $CC|-fcf-protection=full"
	if command -v clang >/dev/null && [ "$CC" != clang ]; then
		variants="$variants clang| clang|-fcf-protection=full"
	fi
fi
first=
for v in $variants; do
	cc=${v%%|*} extra=${v#*|}
	name="$cc${extra:+ $extra}"
	out=$T/info-$cc${extra:+-cet}
	# shellcheck disable=SC2086
	if ! build "$out" "$cc" $extra 2>"$T/build.log"; then
		notok "build the info program ($name)"
		diag_file "$T/build.log"
		continue
	fi
	[ -n "$first" ] || first=$out
	tap_prog "$name: routes of every site under 4 route masks" "$out"
done
[ -n "$first" ] || exit 1
for m in list tramp callops all; do
	tap_prog "DYNFTRACE_ROUTES=$m sets the initial mask" env DYNFTRACE_ROUTES=$m "$first" env
done
tap_end
