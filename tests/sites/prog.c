// SPDX-License-Identifier: MIT
/* The traced program of tests/sh/sites-matrix.sh: static and global
 * functions, a tiny one, one with many arguments, calls into libsitelib.so. */
#include <stdio.h>

#define NOINLINE __attribute__((noinline))

int sitelib_add(int a, int b);
long sitelib_sum8(long a, long b, long c, long d, long e, long f, long g, long h);
void sitelib_touch(void);

static volatile int sink;

static NOINLINE void tiny(void)
{
	sink++;
}

static NOINLINE int square(int x)
{
	tiny();
	return x * x;
}

NOINLINE int many_args(int a, int b, int c, int d, int e, int f, int g, int h, int i, int j)
{
	return a + b * c - d + e * f - g + h * i - j + square(a);
}

NOINLINE int global_work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += sitelib_add(i, square(i));
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	sitelib_touch();
	printf("%d %ld\n", global_work(argc) + many_args(1, 2, 3, 4, 5, 6, 7, 8, 9, argc),
	       sitelib_sum8(1, 2, 3, 4, 5, 6, 7, argc));
	return 0;
}
