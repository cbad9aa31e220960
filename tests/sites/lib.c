// SPDX-License-Identifier: MIT
/* libsitelib.so for tests/sh/sites-matrix.sh: global, static and tiny
 * functions in a shared library. */
#define NOINLINE __attribute__((noinline))

int sitelib_counter;

static NOINLINE int lib_static_twice(int x)
{
	sitelib_counter++;
	return 2 * x;
}

/* Tiny: the next function may start within 16 bytes of this one's site. */
NOINLINE void sitelib_touch(void)
{
	sitelib_counter++;
}

NOINLINE int sitelib_add(int a, int b)
{
	return lib_static_twice(a) + b;
}

NOINLINE long sitelib_sum8(long a, long b, long c, long d, long e, long f, long g, long h)
{
	sitelib_touch();
	return a + b + c + d + e + f + g + h;
}
