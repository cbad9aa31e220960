/* SPDX-License-Identifier: MIT */
/*
 * core_work.c - the workload of bench/core_bench.c, compiled twice: with the
 * trace flags and -DPFX=inst_ (compiled-in sites) and without them and
 * -DPFX=plain_ (an uninstrumented build of the same code).
 *
 *   PFX_leaf(x)     one small function: the per-call cost
 *   PFX_loop(n)     calls PFX_leaf n times
 *   PFX_fib(n)      recursive Fibonacci: many small calls
 */
#ifndef PFX
#define PFX inst_
#endif
#define CAT(a, b)  a##b
#define XCAT(a, b) CAT(a, b)
#define NAME(n)	   XCAT(PFX, n)
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

NOINLINE unsigned long NAME(leaf)(unsigned long x)
{
	return x * 2654435761UL + 1;
}

NOINLINE unsigned long NAME(loop)(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += NAME(leaf)(i);
	return s;
}

NOINLINE unsigned long NAME(fib)(unsigned long n)
{
	return n < 2 ? n : NAME(fib)(n - 1) + NAME(fib)(n - 2);
}
