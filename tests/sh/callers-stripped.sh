#!/usr/bin/env bash
# description: function-tracer callers in a stripped program's unnamed functions are named sub_ADDR+0xOFF [object] from its FDEs, in replay and dump --chrome; so in a distribution program traced with -P
# config: asan
#
# A program built with sites whose static helper() calls mid(), which
# calls leaf(), is stripped and recorded with -T function: the runtime
# knows none of its functions' names nor sizes, so the reader takes the
# callers' functions from the object's .eh_frame, named as `sites --all`
# names them (sub_ADDR, ADDR its link-time address, nm's before strip),
# with the caller's offset and the object: replay and dump --chrome show
# `<- sub_HELPER+0x.. [prog]` for mid and `<- sub_MID+0x.. [prog]` for
# leaf, never a raw address. Then /bin/ls (stripped as distributed),
# every other one of its FDE functions traced with -P (names
# sub_ADDR@ls, the second last digit of ADDR odd): a caller in one of
# the untraced others is named the same way.
# Env: TOP B CC SAN.
. "$(dirname "$0")/../gen/common.sh"
record_setup
record_san

cat >prog.c <<'X'
#include <stdio.h>
__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }
__attribute__((noinline)) int mid(int x) { return leaf(x) + 2; }
static __attribute__((noinline)) int helper(int x)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += mid(x + i);
	return s;
}
int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", helper(argc));
	return 0;
}
X
cc_recorded prog prog.c
addr() { nm prog | sed -nE "s/^0*([0-9a-f]+) [tT] $1\$/\1/p"; }
helper=$(addr helper) mid=$(addr mid) leaf=$(addr leaf)
if [ -z "$helper" ] || [ -z "$mid" ] || [ -z "$leaf" ]; then
	notok "nm finds helper, mid and leaf"
	nm prog | diag_file /dev/stdin
	exit 1
fi
# the binutils of ARCH (the host's strip knows x86-64 only)
strip=strip
[ "$ARCH" != x86_64 ] && strip=${CC%gcc}strip
"$strip" prog
if [ "$ARCH" = riscv64 ]; then
	# Left open: the reader finds no FDE for riscv64's static functions, so
	# their callers stay raw addresses there.
	skip "callers of a stripped riscv64 program: not named from its FDEs yet"
	echo "1..$tap_n"
	exit 0
fi
recorded d -T function ./prog
check $rc "record -T function of the stripped program exits 0"
"$DFT" replay -d d --no-time >rep 2>rep.err
check $? "replay exits 0"
# A caller is named from its function's FDE. gcc's aarch64 and riscv64
# FDEs start after the 8 bytes of entry NOPs, x86-64's at the symbol.
fde=0
[ "$ARCH" != x86_64 ] && fde=8
hfde=$(printf '%x' $((16#$helper + fde))) mfde=$(printf '%x' $((16#$mid + fde)))
nmid=$(grep -cE "\] sub_$mid\(\) <- sub_$hfde\+0x[0-9a-f]+ \[prog\]\$" rep)
nleaf=$(grep -cE "\] sub_$leaf\(\) <- sub_$mfde\+0x[0-9a-f]+ \[prog\]\$" rep)
if [ "$nmid" -eq 3 ] && [ "$nleaf" -eq 3 ]; then
	ok "replay: callers in unnamed functions as sub_ADDR+0xOFF [prog]"
else
	notok "replay: mid called from sub_$hfde $nmid times, leaf from sub_$mfde $nleaf times (want 3 and 3)"
	diag_file rep
fi
if grep -E '<- 0x[0-9a-f]+ \[prog\]$' rep >raw; then
	notok "replay: no caller in the program left as a raw address"
	diag_file raw
else
	ok "replay: no caller in the program left as a raw address"
fi
"$DFT" dump --chrome -d d >json 2>json.err
check $? "dump --chrome exits 0"
if python3 - json "$hfde" "$mfde" >py 2>&1 <<'PY'; then ok "dump --chrome: the same callers"; else notok "dump --chrome: the same callers"; diag_file py; fi
import json, re, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
callers = {}
for e in ev:
    if e.get("ph") == "i" and "caller" in e.get("args", {}):
        callers.setdefault(e["name"], set()).add(re.sub(r"\+0x[0-9a-f]+", "+OFF", e["args"]["caller"]))
want_mid = {"sub_%s+OFF [prog]" % sys.argv[2]}
want_leaf = {"sub_%s+OFF [prog]" % sys.argv[3]}
mid = [v for k, v in callers.items() if v == want_mid]
leaf = [v for k, v in callers.items() if v == want_leaf]
assert mid and leaf, callers
PY

# A distribution program, stripped: its functions have FDEs only.
ls=/bin/ls
if [ -n "$SAN" ]; then
	skip "-P on $ls: without a sanitizer only"
elif [ "$ARCH" != x86_64 ]; then
	skip "-P on $ls: the host's program, not $ARCH's"
elif [ ! -x "$ls" ] || [ -n "$(nm "$ls" 2>/dev/null)" ]; then
	skip "no stripped $ls"
else
	recorded dl -T function -P 'sub_*[13579bdf]0?ls' -- "$ls" / >/dev/null
	"$DFT" replay -d dl --no-time >lrep 2>lrep.err
	named=$(grep -cE '<- sub_[0-9a-f]*[02468ace]0\+0x[0-9a-f]+ \[ls\]$' lrep)
	if [ "$rc" -eq 0 ] && [ "$named" -gt 0 ] && ! grep -qE '<- 0x[0-9a-f]+ \[ls\]$' lrep; then
		ok "$ls -P: $named calls from untraced functions named sub_ADDR+0xOFF [ls], none a raw address"
	else
		notok "$ls -P: status $rc, $named named callers"
		grep -E '<- 0x[0-9a-f]+ \[ls\]$' lrep | diag_file /dev/stdin
		diag_file err
	fi
fi
tap_end
