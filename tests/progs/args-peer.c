// SPDX-License-Identifier: MIT
/*
 * args-peer.c - a program whose arguments and return values
 * tests/sh/args.sh records with dynftrace and with uftrace (built with
 * -pg -mfentry -mrecord-mcount, which both take): the values they print
 * must be equal. Only values both print alike: no NULL or bad pointer,
 * no string longer than dynftrace keeps, no character that needs an
 * escape (dynftrace escapes them, uftrace prints them raw).
 */
#include <stdarg.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, used))

volatile int sink;

NOINLINE int add(int a, int b)
{
	sink++;
	return a + b;
}

NOINLINE long add64(long a, unsigned long b)
{
	sink++;
	return a + (long)b;
}

NOINLINE int name_len(const char *s, char c)
{
	sink += c;
	return (int)strlen(s);
}

NOINLINE double mix(float f, double d, int i)
{
	sink++;
	return f * d + i;
}

NOINLINE float half(float f)
{
	sink++;
	return f / 2;
}

NOINLINE long eight(long a, long b, long c, long d, long e, long f, long g, long h)
{
	sink++;
	return a - b + c - d + e - f + g - h;
}

NOINLINE int vsum(int n, ...)
{
	va_list ap;
	int s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	sink++;
	return s;
}

NOINLINE int fib(int n)
{
	int r = n < 2 ? n : fib(n - 1) + fib(n - 2);

	sink++;
	return r;
}

NOINLINE unsigned mask(unsigned v, unsigned short m, unsigned char k)
{
	sink++;
	return (v & m) | k;
}

int main(void)
{
	add(-5, 3);
	add(-100001, 100000);
	add(2147483647, -2147483647);
	add64(-1, 0xffffffffffULL);
	add64(1L << 40, 12345);
	name_len("dynftrace", 'y');
	name_len("", 'Z');
	mix(0.5f, -3.25, -7);
	half(-1e10f);
	eight(1, 2, 3, 4, 5, 6, 7, 8);
	vsum(4, 1, -2, 300000, 4);
	fib(5);
	mask(0xdeadbeef, 0xffff, 0x7f);
	return 0;
}
