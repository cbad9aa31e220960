// SPDX-License-Identifier: MIT
// aa.c - functions whose arguments and return values --auto-args records
// from DWARF (tests/sh/auto-args.sh). The values come from argc so that -O2
// cannot fold the calls away.
#include <stdio.h>
enum color { RED, GREEN = 5, BLUE };
__attribute__((noinline)) int add(int a, int b)
{
	return a + b;
}
__attribute__((noinline)) long neg(long v)
{
	return -v;
}
__attribute__((noinline)) const char *greet(const char *s)
{
	return s + 1;
}
__attribute__((noinline)) double half(double x, int k)
{
	return x / k;
}
__attribute__((noinline)) enum color pick(enum color c)
{
	return c == RED ? BLUE : GREEN;
}
__attribute__((noinline)) void nothing(unsigned char u)
{
	__asm__ volatile("" : : "r"(u));
}
int main(int argc, char **argv)
{
	int one = argc; /* 1 */
	(void)argv;
	printf("%d %ld %s %.1f %d\n", add(one + 1, one + 2), neg(-1234567890123L * one),
	       greet(one == 1 ? "xhello" : "y"), half(3.0 * one, one + 1),
	       pick((enum color)(one - 1)));
	nothing((unsigned char)(199 + one));
	return 0;
}
