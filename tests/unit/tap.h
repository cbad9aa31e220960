/* SPDX-License-Identifier: MIT */
/* tap.h - minimal TAP producer for dynftrace's unit tests. */
#ifndef DYNFTRACE_TAP_H
#define DYNFTRACE_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

/* How many times a stress loop repeats: N divided by DFT_TEST_SLOW (set by
 * run.sh under emulation, where every system call and code write costs
 * tens of times more), at least 1. The checks stay the same. */
static inline int tap_scaled(int n)
{
	const char *s = getenv("DFT_TEST_SLOW");
	int d = s ? atoi(s) : 1;
	return d > 1 && n / d > 0 ? n / d : d > 1 ? 1 : n;
}

static inline void tap_plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
}

__attribute__((format(printf, 2, 3))) static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

__attribute__((format(printf, 1, 2))) static inline void diag(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static inline void skip(const char *why)
{
	tap_n++;
	printf("ok %d # SKIP %s\n", tap_n, why);
	fflush(stdout);
}

static inline int tap_done(void)
{
	return tap_failed ? 1 : 0;
}
#endif
