/* SPDX-License-Identifier: MIT */
/*
 * funcs.c - the traced functions of the route tests (tests/sh/routes-*.sh).
 *
 * Built twice into each test program: with -DPFX=co_ and the flags of
 * `dynftrace cflags --call-ops` (their sites have a CALL_OPS literal), and
 * with -DPFX=tr_ and the plain flags (no literal: trampolines, the common
 * trampoline or the list function). The test programs themselves are built
 * without sites.
 */
#include "funcs.h"

#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define FN(n)	   CAT(PFX, n)

NOINLINE unsigned long FN(f0)(unsigned long x)
{
	return x * 3 + 1;
}

NOINLINE unsigned long FN(f1)(unsigned long x)
{
	return x * 5 + 2;
}

NOINLINE unsigned long FN(f2)(unsigned long x)
{
	return x * 7 + 3;
}

NOINLINE unsigned long FN(f3)(unsigned long x)
{
	return x * 9 + 4;
}

NOINLINE unsigned long FN(keep)(unsigned long x)
{
	return x * 11 + 5;
}

/* Only for the deterministic late-entry checks (routes-free). */
NOINLINE unsigned long FN(late)(unsigned long x)
{
	return x * 13 + 6;
}
