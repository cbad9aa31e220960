/*
 * plain: a program built with no dynftrace flags, whose functions are
 * traced through relocated entries (tests/sh/entries.sh). gcc -O2 lets
 * callers keep values in call-clobbered registers across calls to local
 * functions that do not touch them (-fipa-ra): sum_ints keeps its counter
 * and total in rcx/rdx/rsi, sum_dbls its total in a vector register, so a
 * trampoline that changes any register changes the result. loop_head
 * starts with a loop: the relocator must refuse it. Prints the results,
 * the same traced or not.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE int leaf(int x)
{
	return x * 3 + 1;
}

NOINLINE double dleaf(double x)
{
	return x * 1.5;
}

NOINLINE long sum_ints(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += leaf(i);
	return s;
}

NOINLINE double sum_dbls(int n)
{
	double s = 0.25;
	for (int i = 0; i < n; i++)
		s += dleaf((double)i);
	return s;
}

/* The first instruction is the loop's head: a branch comes back into the
 * bytes a jump would replace. */
long loop_head(long n);
__asm__(".text\n"
	".globl loop_head\n"
	".type loop_head, @function\n"
	"loop_head:\n"
	".cfi_startproc\n"
	"	xorl %eax, %eax\n"
	"1:	addq %rdi, %rax\n"
	"	decq %rdi\n"
	"	jg 1b\n"
	"	ret\n"
	".cfi_endproc\n"
	".size loop_head, . - loop_head\n");

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	/* One call after the other: the golden call tree's order. */
	long si = sum_ints(n);
	double sd = sum_dbls(n);
	long lh = loop_head(n);
	printf("%ld %.2f %ld\n", si, sd, lh);
	return 0;
}
