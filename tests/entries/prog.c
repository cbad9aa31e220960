// SPDX-License-Identifier: MIT
/* Functions of every kind for tests/sh/elf-entries.sh: static ones (only an
 * FDE finds them once stripped), global ones, a tiny one, and main. */
#include <stdio.h>
#include <stdlib.h>

static int __attribute__((noinline)) st_square(int x)
{
	return x * x + rand() % 3;
}

static int __attribute__((noinline)) st_cube(int x)
{
	return x * st_square(x) - rand() % 5;
}

static long __attribute__((noinline)) st_sum(const int *v, int n)
{
	long s = 0;

	for (int i = 0; i < n; i++)
		s += st_cube(v[i]);
	return s;
}

int __attribute__((noinline)) g_scale(int x)
{
	return (int)st_sum(&x, 1) * 3;
}

int main(int argc, char **argv)
{
	int v[4] = {argc, 2, 3, 4};

	(void)argv;
	printf("%ld %d\n", st_sum(v, 4), g_scale(argc));
	return 0;
}
