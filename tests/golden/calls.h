/* SPDX-License-Identifier: MIT */
/*
 * calls.h - one call graph for the filter and trigger goldens
 * (s-regex*.c, s-trig-*.c): each includes it and gets its options from
 * its s-NAME.opts / s-NAME.ropts.
 *
 *   main -> a -> b -> c       twice, around off() and on()
 *        -> alloc_two -> alloc_one
 *        -> free_one
 *        -> slow -> quick     (slow sleeps 300 ms, quick does not)
 */
#include <time.h>

#include "golden.h"

GOLDEN_SINK;

NOINLINE void c(void)
{
	sink++;
}
NOINLINE void b(void)
{
	c();
	sink++;
}
NOINLINE void a(void)
{
	b();
	sink++;
}
NOINLINE void alloc_one(void)
{
	sink++;
}
NOINLINE void alloc_two(void)
{
	alloc_one();
	sink++;
}
NOINLINE void free_one(void)
{
	sink++;
}
NOINLINE void off(void)
{
	sink++;
}
NOINLINE void on(void)
{
	sink++;
}
NOINLINE void quick(void)
{
	sink++;
}
NOINLINE void slow(void)
{
	struct timespec ts = {0, 300 * 1000 * 1000};
	quick();
	nanosleep(&ts, NULL);
	sink++;
}

int main(void)
{
	a();
	alloc_two();
	free_one();
	off();
	a();
	on();
	b();
	slow();
	return sink == 0;
}
