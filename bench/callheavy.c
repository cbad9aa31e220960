/* SPDX-License-Identifier: MIT */
/* callheavy - a call-heavy workload for tracer comparisons: N calls of small
 * functions (a recursive fib plus a loop of leaf calls). Prints nothing but
 * the checksum; the driver times it. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
static volatile long sink;

NOINLINE long leaf(long x)
{
	return x * 3 + sink;
}

NOINLINE long fib(int n)
{
	return n < 2 ? leaf(n) : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 22;
	long loops = argc > 2 ? atol(argv[2]) : 1000000;
	long s = fib(n);
	for (long i = 0; i < loops; i++)
		s += leaf(i);
	printf("%ld\n", s);
	return 0;
}
