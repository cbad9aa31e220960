/* SPDX-License-Identifier: MIT */
/* dlt-lib.c - a traced library dlopen'd by dlt-main.c (tests/sh/dlopen.sh). */
static volatile int sink;

__attribute__((noinline)) unsigned long dl_one(unsigned long x)
{
	sink++;
	return x * 3 + 1;
}

__attribute__((noinline)) unsigned long dl_two(unsigned long x)
{
	sink++;
	return x * 5 + 2;
}

__attribute__((noinline)) unsigned long dl_three(unsigned long x)
{
	sink++;
	return x * 7 + 3;
}

/* Runs while the library loads, before the runtime converted its sites. */
__attribute__((constructor)) static void dl_init(void)
{
	unsigned long (*volatile f)(unsigned long) = dl_one;
	sink += (int)f(1);
}
