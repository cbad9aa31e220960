#!/usr/bin/env bash
# description: under emulation: entry relocation, each PC-relative form run through its block, a program built without sites recorded with -P and replayed (every register kept), and the C library patched under a program (aarch64, riscv64)
#
# Run by tests/run.sh for ARCH != x86_64 only. Env: TOP, B (the cross
# build), ARCH, RUN_CMD (the emulator and its options), CC_CROSS (default
# ARCH-linux-gnu-gcc). tests/reloc/t-reloc-a64.c (aarch64) and
# t-reloc-rv.c (riscv64) are built with lib/arch/ARCH/reloc.c compiled
# in (hidden in the runtime). tests/cross/plain.c is built with no
# dynftrace flag and started as `record -P` would start it (the runtime
# preloaded, the settings in its environment: the command cannot exec a
# guest binary under qemu-user); DYNFTRACE_PATCH goes through the host's
# environment, which qemu-user hands to the guest (-E splits at commas).
# riscv64's plain.c also counts the registers a traced call changed
# (regcheck: none may), and is run once more linked with the runtime,
# its callbacks registered through the API on each route of a relocated
# entry (light, full, both).
set -u
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { if eval "$1"; then ok "$2"; else notok "$2"; fi; }
case $ARCH in
aarch64) unit=t-reloc-a64 ;;
riscv64) unit=t-reloc-rv ;;
*)
	echo "ok 1 # SKIP no entry relocation on $ARCH"
	echo "1..1"
	exit 0
	;;
esac
read -r -a RUN <<<"$RUN_CMD"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cc=${CC_CROSS:-$ARCH-linux-gnu-gcc}
inc="-I$TOP/include"
for d in lib lib/core lib/ring lib/trace lib/ctl lib/arch/$ARCH; do
	inc="$inc -iquote $TOP/$d"
done

# shellcheck disable=SC2086
if $cc -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE $inc \
	-fno-strict-aliasing "$TOP/tests/reloc/$unit.c" "$TOP/lib/arch/$ARCH/reloc.c" \
	-o "$T/$unit" 2>"$T/build.log"; then
	"${RUN[@]}" "$T/$unit" >"$T/unit.out" 2>&1
	rc=$?
	grep -v '^ok' "$T/unit.out" | sed 's/^/#   /'
	total=$(sed -n 's/^1\.\.//p' "$T/unit.out")
	check "[ $rc -eq 0 ] && [ -n '$total' ] && [ \$(grep -c '^ok' '$T/unit.out') -eq $total ]" \
		"$unit: each form relocated into a far block gives the original's results, the refusals say why (${total:-?} checks)"
else
	notok "build $unit"
	sed 's/^/#   /' "$T/build.log" | head -20
fi
# The frame table's verdict: a C function is entered by a call (its CIE
# states the architecture's rule at a call: riscv64's gcc writes it as
# def_cfa_register alone, aarch64's as def_cfa).
cat >"$T/fde.c" <<'C'
__attribute__((noinline)) long fde_a(long x) { return x * 3 + 1; }
__attribute__((noinline)) long fde_b(long x) { return fde_a(x) + fde_a(x + 1); }
int main(int argc, char **argv) { (void)argv; return (int)fde_b(argc) & 1; }
C
if $cc -O2 -falign-functions=4 -fasynchronous-unwind-tables "$T/fde.c" -o "$T/fde" 2>"$T/build.log"; then
	"${RUN[@]}" "$B/dynftrace" sites --all "$T/fde" >"$T/fde.out" 2>&1
	grep -E '^(fde_a|fde_b|main)[[:space:]]' "$T/fde.out" | sed 's/^/#   /'
	check "[ \$(grep -cE '^(fde_a|fde_b|main)[[:space:]]+entry' '$T/fde.out') -eq 3 ]" \
		"sites --all: C functions with unwind tables are entries (the CIE's rule at a call is this architecture's)"
else
	notok "build fde.c"
	sed 's/^/#   /' "$T/build.log" | head -20
fi
prog=$T/plain
if ! $cc -O2 -g "$TOP/tests/cross/plain.c" -o "$prog" 2>"$T/build.log"; then
	notok "build plain.c"
	sed 's/^/#   /' "$T/build.log" | head -20
	echo "1..$n"
	exit 1
fi
"${RUN[@]}" "$prog" >"$T/plain.out" 2>&1
funcs='bump,pick,leaf,outer,spin,cbzfn,litfn,main'
[ "$ARCH" = riscv64 ] && funcs="$funcs,brfn,jfn,cross,mcfn,keep,odd"
for tracer in function_graph function; do
	d=$T/$tracer
	mkdir -p "$d"
	printf 'version: 1\ncommand: plain\n' >"$d/info"
	DYNFTRACE_PATCH=$funcs "${RUN[@]}" -E LD_PRELOAD="$B/libdynftrace.so" \
		-E DYNFTRACE_RECORD="$d" -E DYNFTRACE_TRACER=$tracer -E DYNFTRACE_VERBOSE=1 \
		"$prog" >"$T/$tracer.out" 2>"$T/$tracer.err"
	check "[ \$? -eq 0 ] && cmp -s '$T/plain.out' '$T/$tracer.out'" \
		"$tracer: the program patched with -P runs and prints as unpatched ($(cat "$T/plain.out"))"
	"${RUN[@]}" "$B/dynftrace" replay -d "$d" >"$T/$tracer.txt" 2>"$T/$tracer.rerr"
	check "[ \$? -eq 0 ]" "$tracer: replay reads the session"
done
g=$T/function_graph.txt
sed 's/^/#   /' "$g" | head -12
if [ "$ARCH" = riscv64 ]; then
	check "grep -q 'spin not patched: a branch at +0x2 targets +0, the relocated instructions' '$T/function_graph.err' && ! grep -q spin '$g'" \
		"spin (its loop's head is the entry) refused, with why"
	check "grep -q 'odd not patched: starts on a 2-byte boundary' '$T/function_graph.err' && ! grep -q odd '$g'" \
		"odd (on a 2-byte boundary: no aligned word to patch with one store) refused, with why"
	check "[ \$(grep -c 'not patched' '$T/function_graph.err') -eq 2 ]" "every other function patched"
else
	check "grep -q 'spin not patched: a branch at +0x4 targets +0, the relocated instruction' '$T/function_graph.err' && ! grep -q spin '$g'" \
		"spin (its loop's head is the entry) refused, with why"
	check "[ \$(grep -c 'not patched' '$T/function_graph.err') -eq 1 ]" "every other function patched"
fi
check "grep -q '^[^|]*| main() {\$' '$g' && grep -q '} /\\* main \\*/' '$g'" "main() at the root, with its return"
check "[ \$(grep -c '|   outer() {\$' '$g') -eq 4 ] && [ \$(grep -c '|   } /\\* outer \\*/' '$g') -eq 4 ]" \
	"outer() (a frame first) called 4 times from main, each returns"
check "[ \$(grep -c '|     leaf() {\$' '$g') -eq 4 ] && [ \$(grep -c '|       pick();' '$g') -eq 4 ]" \
	"leaf() nested in outer(), pick() (a compare first) a leaf in it"
check "[ \$(grep -c '|     bump();' '$g') -eq 4 ]" "bump() (a global's address first: adrp, auipc) a leaf of outer(), 4 times"
check "[ \$(grep -c '|   cbzfn();' '$g') -eq 2 ] && [ \$(grep -c '|   litfn();' '$g') -eq 1 ]" \
	"cbzfn() (cbz, c.beqz first) twice, litfn() (a PC-relative literal load first) once, from main"
f=$T/function.txt
check "[ \$(grep -c 'bump' '$f') -eq 4 ] && [ \$(grep -c 'cbzfn' '$f') -eq 2 ] && ! grep -q '{' '$f'" \
	"function: the calls, no returns"
if [ "$ARCH" = riscv64 ]; then
	check "[ \$(grep -c '|   brfn();' '$g') -eq 2 ] && [ \$(grep -c '|   jfn();' '$g') -eq 1 ] && [ \$(grep -c '|   cross();' '$g') -eq 1 ]" \
		"brfn() (beq first) twice, jfn() (c.j first) and cross() (a 4-byte instruction across the word) once"
	check "[ \$(grep -c '|   mcfn();' '$g') -eq 1 ] && [ \$(grep -c '|   keep();' '$g') -eq 1 ] && [ \$(grep -c 'keep() <- regcheck' '$f') -eq 1 ]" \
		"mcfn() (jal t0 first) once, keep() (called by regcheck) once"
	check "grep -q 'regs changed: 0\$' '$T/function_graph.out' && grep -q 'regs changed: 0\$' '$T/function.out'" \
		"every register but sp, gp, tp, s0, ra comes back from a traced call as the callee left it: t0-t6, a1-a7, s1-s11, f0-f31, fcsr (graph tracer: the entry and the hooked return)"
	api=$T/plain-api
	# shellcheck disable=SC2086
	if $cc -O2 -g -DPLAIN_API $inc "$TOP/tests/cross/plain.c" -o "$api" -L"$B" \
		-Wl,--no-as-needed -ldynftrace -Wl,--as-needed -Wl,-rpath,"$B" -lpthread 2>"$T/build.log"; then
		got=$(DYNFTRACE_PATCH=keep "${RUN[@]}" "$api" api 500 2>"$T/api.err")
		check "[ '$got' = 'api ok 500' ]" \
			"API callbacks on a relocated entry: light (call_ops), full (ops), both (list); every call counted, every register kept ($got)"
		[ "$got" = "api ok 500" ] || sed 's/^/#   /' "$T/api.err" | head -10
	else
		notok "build plain.c with the API"
		sed 's/^/#   /' "$T/build.log" | head -20
	fi
fi

# The whole C library under examples/wordfreq, which has compiler sites
# of its own: aarch64, 3,300 of Debian 12's 3,340 entries; riscv64, 1,040
# of 2,377 here (1,170 start on a 2-byte boundary, 131 lie out of a jal's
# +-1 MiB from the arena, the rest as aarch64's).
d=$T/libc
mkdir -p "$d"
printf 'version: 1\ncommand: wordfreq\n' >"$d/info"
"${RUN[@]}" "$B/examples/wordfreq" >"$T/wf.plain" 2>&1
DYNFTRACE_PATCH='*@libc.so*' "${RUN[@]}" -E LD_PRELOAD="$B/libdynftrace.so" \
	-E DYNFTRACE_RECORD="$d" -E DYNFTRACE_TRACER=function_graph \
	"$B/examples/wordfreq" >"$T/wf.out" 2>"$T/wf.err"
check "[ \$? -eq 0 ] && cmp -s '$T/wf.plain' '$T/wf.out'" \
	"-P '*@libc.so*': wordfreq runs and prints as untraced"
grep 'cannot be' "$T/wf.err" | sed 's/^/#   /'
"${RUN[@]}" "$B/dynftrace" replay -d "$d" >"$T/wf.txt" 2>&1
"${RUN[@]}" "$B/dynftrace" info -d "$d" >"$T/wf.info" 2>&1
if [ "$ARCH" = riscv64 ]; then
	check "grep -q '^[^|]*|     snprintf() {\$' '$T/wf.txt' && grep -q '^[^|]*|       _IO_setb();\$' '$T/wf.txt'" \
		"-P '*@libc.so*': libc's functions nested among the program's (snprintf() in add_word(), _IO_setb() in it)"
	np=$(sed -n 's/^# patched (-P) *: \([0-9]*\) functions.*/\1/p' "$T/wf.info")
	check "[ '${np:-0}' -ge 900 ]" \
		"-P '*@libc.so*': $(sed -n 's/^# patched (-P) *: //p' "$T/wf.info") (at least 900: where the arena lands decides how many are in jal reach)"
else
	check "grep -q '^[^|]*|         snprintf() {\$' '$T/wf.txt' && grep -q '|   __cxa_atexit() {\$' '$T/wf.txt'" \
		"-P '*@libc.so*': libc's functions nested among the program's (snprintf() in add_word())"
fi
echo "1..$n"
[ "$fails" -eq 0 ]
