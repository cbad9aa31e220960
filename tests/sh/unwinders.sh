#!/usr/bin/env bash
# description: backtrace() and _Unwind_Backtrace under function_graph see the frames they see untraced
# config: asan
#
# A program prints, from three traced frames deep, the functions that
# backtrace() (through backtrace_symbols) and _Unwind_Backtrace find. Under
# `record` the traced frames' return addresses are the graph tracer's hooks
# (no unwind information): the runtime's wrappers put the originals back
# for the walk. The output must be the untraced one: the same frames, none
# of the runtime's. With libcapstone4, again with every function of the
# program and its libraries relocated (-P '*' --patch-libs). And backtrace()
# into a buffer longer than the runtime's copy on the stack, 300 frames deep.
# Env: TOP B CC SAN ARCH.
. "$(dirname "$0")/../gen/common.sh"
DFT=$B/dynftrace
cd "$T" || exit 1
record_san

cat >bt.c <<'EOF'
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>
static int nuw;
static _Unwind_Reason_Code one(struct _Unwind_Context *c, void *arg)
{
	(void)c;
	(void)arg;
	nuw++;
	return _URC_NO_REASON;
}
/* the function part of "prog(func+0x1f) [0x...]", or "?" */
static const char *fname(const char *s, char *out, size_t n)
{
	const char *a = strchr(s, '('), *b = a ? strpbrk(a, "+)") : NULL;
	if (!a || !b || b == a + 1)
		return "?";
	snprintf(out, n, "%.*s", (int)(b - a - 1), a + 1);
	return out;
}
__attribute__((noinline)) int c(void)
{
	void *b[64];
	char f[128];
	int n = backtrace(b, 64);
	char **s = backtrace_symbols(b, n);
	for (int i = 0; i < n && s; i++)
		printf("%s%s", i ? " " : "", fname(s[i], f, sizeof(f)));
	free(s);
	_Unwind_Backtrace(one, NULL);
	printf("\nbacktrace %d, _Unwind_Backtrace %d\n", n, nuw);
	return n;
}
__attribute__((noinline)) int b2(void) { return c() + 1; }
__attribute__((noinline)) int a(void) { return b2() + 1; }
/* "deep": 300 traced frames fill a buffer longer than the wrapper's copy
 * on the stack */
static volatile int sink;
__attribute__((noinline)) int deep(int n)
{
	if (n) {
		int r = deep(n - 1) + 1;
		sink = r;
		return r;
	}
	void *b[200];
	printf("deep backtrace %d\n", backtrace(b, 200));
	return 0;
}
int main(int argc, char **argv)
{
	if (argc > 1)
		return deep(300) == 300 ? 0 : 1;
	return a() > 3 ? 0 : 1;
}
EOF
# shellcheck disable=SC2086
if ! $CC -O1 -g -rdynamic $TRACE_FLAGS $SANFLAGS bt.c -o bt 2>build.log; then
	notok "build the program"
	diag_file build.log
	exit 1
fi
# from c() on: under ASan its interceptor of backtrace() is a frame too,
# named or not by backtrace_symbols
norm() { sed -e 's/^.* c b2 a main /c b2 a main /' "$1" >"$1.n" && mv "$1.n" "$1"; }
./bt >want 2>/dev/null
norm want
if ! grep -q '^c b2 a main ' want; then
	skip "backtrace() does not reach main untraced here ($(head -1 want)): nothing to compare"
	tap_end
	exit
fi
# shellcheck disable=SC2086
"$DFT" record $HIDE -d d ./bt >got 2>err
rc=$?
norm got
nc=$("$DFT" replay -d d 2>/dev/null | grep -c '| *c();\|| *c() {')
if [ $rc -eq 0 ] && cmp -s want got && grep -q '^c b2 a main ' got && [ "$nc" -eq 1 ]; then
	ok "function_graph: backtrace and _Unwind_Backtrace as untraced ($(tail -1 got))"
else
	notok "function_graph: record status $rc, c() recorded $nc times; untraced and traced output differ"
	diag_file want
	diag_file got
	diag_file err
fi

# A buffer longer than the wrapper's copy on the stack, filled: every slot
./bt deep >want.deep 2>/dev/null
rm -rf d
"$DFT" record $HIDE -d d ./bt deep >got.deep 2>err
rc=$?
if [ $rc -eq 0 ] && cmp -s want.deep got.deep && grep -q '^deep backtrace 200$' got.deep; then
	ok "function_graph: backtrace() fills 200 slots from 300 frames deep, as untraced"
else
	notok "function_graph: record status $rc; backtrace() from 300 frames deep differs"
	diag_file want.deep
	diag_file got.deep
	diag_file err
fi

if [ "$ARCH" = x86_64 ] && [ -z "$SAN" ] && ldconfig -p 2>/dev/null | grep -q libcapstone.so.4; then
	rm -rf d
	"$DFT" record -d d -P '*' --patch-libs ./bt >got 2>err
	rc=$?
	norm got
	if [ $rc -eq 0 ] && cmp -s want got; then
		ok "-P '*' --patch-libs: backtrace and _Unwind_Backtrace as untraced"
	else
		notok "-P '*' --patch-libs: record status $rc; untraced and traced output differ"
		diag_file want
		diag_file got
		diag_file err
	fi
else
	skip "-P '*' --patch-libs: x86-64 with libcapstone4 and no sanitizer only"
fi
tap_end
