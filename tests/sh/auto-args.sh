#!/usr/bin/env bash
# description: record --auto-args: every function the program's DWARF describes records its arguments and return value (integers, a 64-bit negative, a string, a double, an enum by name); no DWARF or another tracer give one sentence
# config: asan
#
# tests/autoargs/aa.c built with -g and the site flags by each compiler at
# -O0 and -O2; `live -a` must show each call with its values as replay
# prints them (uftrace's form). Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
D=$B/dynftrace
[ "$SAN" = asan ] && export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"

"$D" sites --args "$D" >/dev/null 2>"$T/probe.err"
if grep -q "built without DWARF support" "$T/probe.err"; then
	skip "this dynftrace was built without libdw (install libdw-dev and rebuild)"
	tap_end
	exit
fi
want='pick(RED) = BLUE;
half(3.000000, 2) = 1.500000;
greet("xhello") = "hello";
neg(-1234567890123) = 1234567890123;
add(2, 3) = 5;
nothing(200);'
for cc in $compilers; do
	for opt in -O0 -O2; do
		p=$T/aa-$cc$opt
		# shellcheck disable=SC2086
		if ! $cc -g $opt $TRACE_FLAGS "$TOP/tests/autoargs/aa.c" -o "$p" 2>"$T/build.log"; then
			notok "$cc $opt: build"
			diag_file "$T/build.log"
			continue
		fi
		out=$("$D" live -a -- "$p" 2>"$T/err")
		rc=$?
		# the calls, without the duration and thread columns, in call order
		got=$(echo "$out" | sed -n 's/^.*| *\(pick\|half\|greet\|neg\|add\|nothing\)(/\1(/p' |
			awk '{ a[NR] = $0 } END { for (i = 1; i <= NR; i++) print a[i] }')
		if [ $rc -eq 0 ] && [ "$(echo "$got" | sort)" = "$(echo "$want" | sort)" ]; then
			ok "$cc $opt: every call shows its arguments and return value"
		else
			notok "$cc $opt: status $rc"
			diag "want (any order):"
			diag "$want"
			diag "got:"
			diag "$got"
			diag_file "$T/err"
		fi
	done
done
# the values survive in the session: replay of a kept record, and enums.txt
rm -rf "$T/d"
"$D" record -a -d "$T/d" -- "$T/aa-${compilers%% *}-O0" >/dev/null 2>"$T/err"
if grep -qx 'color 6 BLUE' "$T/d/enums.txt" && "$D" replay -d "$T/d" 2>&1 | grep -q 'pick(RED) = BLUE;'; then
	ok "record -a: enums.txt holds the enum's labels, replay prints them"
else
	notok "record -a: enums.txt or replay"
	diag_file "$T/d/enums.txt"
	diag_file "$T/err"
fi
# a list longer than the environment holds goes through args.txt: 1,000
# generated functions, each with an argument and a return value (printed in
# hex beyond 100,000, as uftrace does)
bash "$TOP/tests/gen/genfuncs.sh" 1000 >"$T/many.c"
cat >"$T/many-main.c" <<'EOC'
#include <stdio.h>
extern const unsigned long gen_nfuncs;
extern unsigned long (*const gen_funcs[])(unsigned long);
int main(void)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < gen_nfuncs; i++)
		s += gen_funcs[i](i);
	printf("%lu\n", s);
	return 0;
}
EOC
rm -rf "$T/dm"
if $CC -g -O0 $TRACE_FLAGS "$T/many.c" "$T/many-main.c" -o "$T/many" 2>"$T/build.log" &&
	"$D" record -a -d "$T/dm" -- "$T/many" >/dev/null 2>"$T/err"; then
	"$D" replay -d "$T/dm" >"$T/replay" 2>&1
	n=$(grep -cE '\| +[fgh]_[0-9]{4}\([0-9]+\) = (0x[0-9a-f]+|[0-9]+);' "$T/replay")
	if [ -s "$T/dm/args.txt" ] && grep -q '^argument: [0-9]* specifications (args.txt)' "$T/dm/info" &&
		[ "$n" -eq 1000 ]; then
		ok "1,000 functions: the specifications go through args.txt, 1000 calls show their values"
	else
		notok "1,000 functions through args.txt: $n calls with values (want 1000)"
		diag_file "$T/dm/info"
		diag_file "$T/err"
	fi
else
	notok "build or record the 1,000 generated functions"
	diag_file "$T/build.log"
	diag_file "$T/err"
fi
# a program without DWARF: one sentence, non-zero
cc_plain=$T/aa-nodwarf
$CC -O0 $TRACE_FLAGS "$TOP/tests/autoargs/aa.c" -o "$cc_plain" 2>/dev/null
"$D" live -a -- "$cc_plain" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -ne 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "^dynftrace: --auto-args: .*DWARF" "$T/err"; then
	ok "no DWARF: one sentence ($(cat "$T/err")), status $rc"
else
	notok "no DWARF: status $rc"
	diag_file "$T/err"
fi
"$D" record -a -T function -d "$T/d2" -- "$cc_plain" >/dev/null 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "function_graph tracer only" "$T/err"; then
	ok "-a with the function tracer: a usage error"
else
	notok "-a with the function tracer: status $rc"
	diag_file "$T/err"
fi
tap_end
