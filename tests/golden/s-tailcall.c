// SPDX-License-Identifier: MIT
/*
 * s-tailcall: calls that end a function. At -O2 gcc and clang turn each
 * `return f(...)` below into a jump (tests/sh/golden.sh checks that they
 * did); the trace must show the callee inside the function that jumped to
 * it, as at -O0, and never an unwind.
 *   - tailer -> leafb: one tail call;
 *   - chain1 -> chain2 -> chain3 -> leafb: a chain of them;
 *   - t_even <-> t_odd: mutual tail recursion;
 *   - to_untraced -> untraced (no entry site) -> leafb.
 */
#include "golden.h"

GOLDEN_SINK;

NOINLINE int leafb(int x)
{
	sink++;
	return x * 2;
}

NOINLINE int tailer(int x)
{
	sink++;
	return leafb(x + 1);
}

NOINLINE int chain3(int x)
{
	sink++;
	return leafb(x + 3);
}

NOINLINE int chain2(int x)
{
	sink++;
	return chain3(x + 2);
}

NOINLINE int chain1(int x)
{
	sink++;
	return chain2(x + 1);
}

NOINLINE int t_odd(int n);
NOINLINE int t_even(int n)
{
	sink++;
	if (n == 0)
		return 1;
	return t_odd(n - 1);
}

NOINLINE int t_odd(int n)
{
	sink++;
	if (n == 0)
		return 0;
	return t_even(n - 1);
}

/* No entry site: not traced, whatever the build mode. */
__attribute__((noinline, patchable_function_entry(0, 0), no_instrument_function)) int
untraced(int x)
{
	sink++;
	return leafb(x);
}

NOINLINE int to_untraced(int x)
{
	sink++;
	return untraced(x + 1);
}

NOINLINE int outer(int x)
{
	int r = tailer(x);

	sink++;
	return r + 1;
}

int main(void)
{
	int r = outer(3);

	r += chain1(1);
	r += t_even(3);
	r += to_untraced(1);
	sink++;
	return r == 9 + 14 + 0 + 4 ? 0 : 1;
}
