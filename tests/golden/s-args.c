// SPDX-License-Identifier: MIT
/*
 * s-args: arguments and return values (s-args.opts: -A, -R): negative
 * and 64-bit integers, strings (NULL, a bad pointer, a long one, escapes),
 * a character, floats and doubles, the 7th and 8th integer arguments
 * (on the stack on x86-64), a varargs function, and recursion.
 */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "golden.h"

GOLDEN_SINK;

NOINLINE int add(int a, int b)
{
	sink++;
	return (int)((unsigned)a + (unsigned)b); /* wraps (INT_MAX + 1) without UB */
}

NOINLINE unsigned long long mul64(long long a, unsigned long long b)
{
	sink++;
	return (unsigned long long)a * b;
}

/* never reads a pointer below 4096: the bad pointer is the tracer's test */
NOINLINE size_t slen(const char *s, char c)
{
	size_t n = s && (uintptr_t)s >= 4096 ? strlen(s) : 0;

	sink += c;
	return n;
}

NOINLINE double fmix(float f, double d)
{
	sink++;
	return f * d;
}

NOINLINE float fneg(float f)
{
	sink++;
	return -f;
}

NOINLINE long many(long a, long b, long c, long d, long e, long f, long g, long h)
{
	sink++;
	return a + b + c + d + e + f + g + h;
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

NOINLINE int fact(int n)
{
	int r = n <= 1 ? 1 : n * fact(n - 1);

	sink++;
	return r;
}

NOINLINE void noret(int a)
{
	sink += a;
}

NOINLINE int seven(void)
{
	sink++;
	return 7;
}

NOINLINE const char *outer(int a, const char *s)
{
	int r = add(a, -100001);

	r += (int)slen(s, 'x');
	sink += r;
	return s;
}

static const char longstr[] = "0123456789abcdefghijklmnopqrstuvwxyz"
			      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

int main(void)
{
	outer(-3, "hello");
	add(2147483647, 1);
	mul64(-1, 0x123456789abcdefULL);
	slen(NULL, 'a');
	slen((const char *)16, '\n');
	slen(longstr, '\'');
	slen("tab\there \"q\"", 0);
	fmix(1.5f, -2.25);
	fneg(0.125f);
	many(1, -2, 3, -4, 5, -6, 7, -8);
	vsum(3, 10, -20, 30);
	fact(4);
	noret(5);
	seven();
	return 0;
}
