/* SPDX-License-Identifier: MIT */
/* funcs.h - the traced functions of the route tests, both builds (funcs.c). */
#ifndef ROUTES_FUNCS_H
#define ROUTES_FUNCS_H

#define NOINLINE __attribute__((noinline))

#define ROUTES_DECLARE(p)                                                                          \
	unsigned long p##f0(unsigned long x);                                                      \
	unsigned long p##f1(unsigned long x);                                                      \
	unsigned long p##f2(unsigned long x);                                                      \
	unsigned long p##f3(unsigned long x);                                                      \
	unsigned long p##keep(unsigned long x);                                                    \
	unsigned long p##late(unsigned long x);
ROUTES_DECLARE(co_)
ROUTES_DECLARE(tr_)

/* What each function returns, to check that tracing changes nothing. */
static inline unsigned long routes_expect(int k, unsigned long x)
{
	static const unsigned long mul[] = {3, 5, 7, 9, 11, 13};
	return x * mul[k] + (unsigned long)k + 1;
}
#endif
