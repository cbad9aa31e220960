/* SPDX-License-Identifier: MIT */
/*
 * gpr_funcs.c - traced functions taking floating-point arguments, for the
 * DYNFTRACE_OPS_FL_GPR_ONLY test (tests/routes/gpr.c, run by
 * tests/sh/routes-gpr.sh). Built with the plain site flags and the
 * configuration's sanitizers: these functions may use any register; it is
 * the callback that must not.
 */
#include <stdarg.h>

#include "gpr_funcs.h"

NOINLINE double g_dd(double a, double b)
{
	return a * b + a / b;
}

NOINLINE float g_ff(float a, float b, float c)
{
	return a * b - c / a;
}

/* More floating-point arguments than xmm registers: the last ones on the
 * stack, and integers in between. */
NOINLINE double g_mix(long i, double a, int j, float b, double c, double d, double e, double f,
		      double g, double h, double k, double l)
{
	return (double)i * a + (double)j * b + c - d * e + f / g + h * k - l;
}

/* Varargs: %al holds the number of vector registers used. */
NOINLINE double g_va(int n, ...)
{
	va_list ap;
	double s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s = s * 1.5 + va_arg(ap, double);
	va_end(ap);
	return s;
}

/* Structures of doubles travel in xmm registers. */
NOINLINE double g_pt(struct gpr_pt p, struct gpr_pt q)
{
	return p.x * q.y - p.y * q.x;
}

NOINLINE long g_int(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

/* Selected by a normal ops beside the GPR_ONLY one (its stub's body). */
NOINLINE double g_other(double a)
{
	return a * 3.25;
}
