// SPDX-License-Identifier: MIT
/*
 * args.c - the functions whose argument specs `dynftrace sites --args`
 * reads from DWARF (tests/sh/dwarf-args.sh). Built at -O0 and -O2 by gcc
 * and clang: every function is kept out of line, takes values its caller
 * cannot know (no copies specialised for constants) and uses every
 * parameter, so that all four builds give the same specs
 * (tests/dwarf/args.expected).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __clang__
#define KEEP __attribute__((noinline, used))
#else
#define KEEP __attribute__((noinline, noipa, used))
#endif

enum color { RED, GREEN = 5, BLUE = -1 };
typedef enum { MODE_A = 1, MODE_B = 2 } mode_t_;
typedef unsigned long my_size;
/* A 1-byte enum (shown as its integer), an unsigned one with the top bit
 * set (its value in the table: -1, as 32 bits read signed), a name longer
 * than a spec takes (cut). */
enum __attribute__((packed)) tiny { TINY_A = 1, TINY_B = 200 };
enum wide { WIDE_MAX = 0xffffffffu };
enum a_rather_long_enumeration_name_of_fifty_chars { LONG_ONE = 1 };

struct node {
	int v;
	struct node *next;
};
struct pair {
	int a, b;
};
struct big {
	long v[5];
};

volatile long sink;

KEEP int ints(signed char a, unsigned char b, short c, unsigned short d, int e, unsigned f)
{
	return a + b + c + d + e + (int)f;
}

KEEP long longs(long a, unsigned long b, long long c, unsigned long long d)
{
	return a + (long)b + c + (long)d;
}

KEEP bool flag(bool b, char c)
{
	return b && c;
}

KEEP size_t sizes(size_t n, my_size m, const char *s)
{
	return n + m + (s ? s[0] : 0);
}

KEEP char first(char *s)
{
	return s[0];
}

KEEP struct node *walk(struct node *n, const void *p)
{
	sink = (long)p;
	return n ? n->next : NULL;
}

KEEP float fl(float x)
{
	return x * 2;
}

KEEP double mixed(int a, double b, long c, float d, const char *e)
{
	return a + b + (double)c + d + e[0];
}

KEEP enum color paint(enum color c, mode_t_ m)
{
	return c == RED && m == MODE_A ? BLUE : GREEN;
}

KEEP unsigned tiny_wide(enum tiny t, enum wide w,
			enum a_rather_long_enumeration_name_of_fifty_chars l)
{
	return t + (unsigned)w + l;
}

KEEP void nothing(int x)
{
	sink = x;
}

KEEP int by_value(int before, struct pair p, int after)
{
	return before + p.a + p.b + after;
}

KEEP int big_value(struct big b, int after)
{
	return (int)b.v[0] + after;
}

KEEP struct big make_big(int x)
{
	struct big b = {{x, x, x, x, x}};
	return b;
}

KEEP int sum(int n, ...)
{
	va_list ap;
	int s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

KEEP static unsigned hidden(unsigned x, unsigned short y)
{
	return x * y;
}

KEEP int many(int a1, int a2, int a3, int a4, int a5, int a6, int a7, double d)
{
	return a1 + a2 + a3 + a4 + a5 + a6 + a7 + (int)d;
}

/* Values of every size and sign, from argc (1): the compiler cannot fold
 * them into the callees. */
/* d9 takes the first stack slot, so a7 is in the second: arg8. */
KEEP int fp_spill(double d1, double d2, double d3, double d4, double d5, double d6, double d7,
		  double d8, double d9, int a1, int a2, int a3, int a4, int a5, int a6, int a7)
{
	return (int)(d1 + d2 + d3 + d4 + d5 + d6 + d7 + d8 + d9) + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

int main(int argc, char **argv)
{
	struct node n = {argc, NULL};
	struct pair p = {argc, argc};
	struct big b = make_big(argc);

	sink = ints((signed char)-argc, (unsigned char)(argc + 253), (short)(-1000 * argc),
		    (unsigned short)(60000 + argc), -70000 * argc, 4000000000u + (unsigned)argc);
	sink += longs(-5000000000L * argc, 10000000000UL + (unsigned long)argc, -3LL * argc,
		      (unsigned long long)-argc);
	sink += flag(argc > 0, (char)('A' + argc));
	sink += (long)sizes((size_t)argc * 7, (my_size)argc * 9, argv[0]);
	sink += first(argv[0]);
	sink += (long)walk(&n, argv);
	sink += (long)fl((float)argc * 1.5f);
	sink += (long)mixed(-argc, argc * 0.25, -40L * argc, (float)argc * -2.5f, argv[0]);
	sink += paint((enum color)(argc - 2), argc > 0 ? MODE_B : MODE_A);
	sink += tiny_wide(argc > 0 ? TINY_B : TINY_A, (enum wide)(WIDE_MAX + 0u * argc),
			  (enum a_rather_long_enumeration_name_of_fifty_chars)argc);
	nothing(-argc);
	sink += by_value(argc, p, argc);
	sink += big_value(b, argc);
	sink += sum(argc * 2, argc, argc);
	sink += hidden((unsigned)argc * 3, (unsigned short)(argc * 65535));
	sink += many(argc, argc + 1, argc + 2, argc + 3, argc + 4, argc + 5, argc + 6, argc * 0.5);
	sink += fp_spill(argc, argc, argc, argc, argc, argc, argc, argc, argc * 9.0, argc, argc,
			 argc, argc, argc, argc, -argc * 77);
	return 0;
}
