#!/usr/bin/env bash
# description: DYNFTRACE_OPS_FL_GPR_ONLY: a general-registers-only callback on the light per-ops route leaves float/double/varargs results untouched
# config: asan tsan
#
# tests/routes/gpr.c with tests/routes/gpr_funcs.c (traced, the
# configuration's sanitizers) and tests/routes/gpr_cb.c, the callback, built
# as the flag's contract says: -mgeneral-regs-only, no sanitizers (and the
# site flags: it calls a traced function). For gcc, and clang when installed
# (default configuration only). Then the runtime's side of the contract: the
# light route's body (and late_func, dynftrace_regs_arg) use no vector or x87
# register and call nothing but the callback. Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
R=$TOP/tests/routes

CALLOPS=$("$B/dynftrace" cflags --call-ops) || CALLOPS=

# build OUT CC [call-ops]: the gpr program with compiler CC; with a third
# argument, for the CALL_OPS route (gpr_funcs.c with the literal)
build() {
	local out=$1 cc=$2 ff=$TRACE_FLAGS def=
	if [ -n "${3:-}" ]; then
		ff=$CALLOPS def=-DGPR_CALL_OPS
	fi
	if [ "${3:-}" = cet ]; then
		ff="$ff -fcf-protection=full" # endbr64 between literal and site
	fi
	# shellcheck disable=SC2086
	$cc $CFLAGS_T $SANFLAGS $ff -c "$R/gpr_funcs.c" -o "$T/gf.o" &&
		$cc $CFLAGS_T -mgeneral-regs-only -fno-sanitize=all $TRACE_FLAGS \
			-c "$R/gpr_cb.c" -o "$T/gc.o" &&
		CC=$cc cc_prog "$out" $def "$R/gpr.c" "$T/gf.o" "$T/gc.o"
}

for cc in $compilers; do
	if ! build "$T/gpr-$cc" "$cc" 2>"$T/build.log"; then
		notok "build the gpr program with $cc"
		diag_file "$T/build.log"
		continue
	fi
	tap_prog "$cc: GPR_ONLY ops with a -mgeneral-regs-only callback" "$T/gpr-$cc"
	if [ -z "$CALLOPS" ]; then
		notok "dynftrace cflags --call-ops"
	elif ! build "$T/gpr-co-$cc" "$cc" call-ops 2>"$T/build.log"; then
		notok "build the CALL_OPS gpr program with $cc"
		diag_file "$T/build.log"
	else
		tap_prog "$cc: the same on the CALL_OPS route (light CALL_OPS body)" "$T/gpr-co-$cc"
	fi
	if [ -n "$CALLOPS" ] && build "$T/gpr-cet-$cc" "$cc" cet 2>"$T/build.log"; then
		tap_prog "$cc: the same with endbr64 before the sites" "$T/gpr-cet-$cc"
	elif [ -n "$CALLOPS" ]; then
		notok "build the CALL_OPS gpr program with $cc and -fcf-protection=full"
		diag_file "$T/build.log"
	fi
done

# The runtime's functions a GPR_ONLY callback path runs.
if command -v objdump >/dev/null; then
	for fn in dft_ops_light_tmpl dft_callops_light_tmpl late_func dynftrace_regs_arg; do
		objdump -d --no-show-raw-insn "$B/libdynftrace.so" |
			awk -v f="<$fn>:" '$2 == f { on = 1; next } on && /^$/ { exit } on' >"$T/fn"
		n=$(wc -l <"$T/fn")
		vec=$(grep -cE '%[xyz]mm|%st|%mm[0-7]|%k[0-7]' "$T/fn")
		calls=$(grep -E '\bcall' "$T/fn" | grep -cvE 'call +\*\(%r[a-z0-9]+\)$')
		ncall=$(grep -cE '\bcall' "$T/fn")
		if [ "$n" -gt 0 ] && [ "$vec" -eq 0 ] && [ "$calls" -eq 0 ]; then
			ok "$fn: $n instructions, no vector/x87 register, $ncall indirect call(s) only"
		else
			notok "$fn: $n instructions, $vec touching vector/x87 registers, $calls direct calls"
			grep -E '%[xyz]mm|%st|%mm[0-7]|%k[0-7]|call' "$T/fn" | head | sed -e 's/^/# /'
		fi
	done
else
	skip "objdump not installed: the runtime's light entry not inspected"
fi
tap_end
