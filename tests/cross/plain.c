/* SPDX-License-Identifier: MIT */
/*
 * plain.c - an aarch64 program built without sites (no dynftrace flags),
 * for tests/cross/reloc.sh: its functions are traced with -P (entry
 * relocation). What each one's first instruction is, at -O2:
 *   bump   adrp (a global)          leaf, outer  stp (frames; their
 *   pick   cmp                                   callers keep values in
 *   spin   subs, the loop's head                 x2/x3 across the calls:
 *   cbzfn  cbz                                   gcc's -fipa-ra)
 *   litfn  ldr (literal)
 */
#include <stdio.h>

long spin(long n);
long cbzfn(long x);
long litfn(long x);
__asm__(".text\n"
	".globl spin\n.type spin, %function\n.p2align 2\n"
	"spin:\n\tsubs x0, x0, #1\n\tb.ne spin\n\tret\n.size spin, .-spin\n"
	".globl cbzfn\n.type cbzfn, %function\n.p2align 2\n"
	"cbzfn:\n\tcbz x0, 1f\n\tadd x0, x0, #2\n\tret\n1:\tmov x0, #9\n\tret\n"
	".size cbzfn, .-cbzfn\n"
	".globl litfn\n.type litfn, %function\n.p2align 3\n"
	"litfn:\n\tldr x1, 2f\n\tadd x0, x0, x1\n\tret\n\t.p2align 3\n2:\t.quad 1000\n"
	".size litfn, .-litfn\n");

int counter;

__attribute__((noinline)) int bump(int x)
{
	counter += x;
	return counter;
}

__attribute__((noinline)) int pick(int x)
{
	if (!x)
		return 7;
	return x * 3;
}

__attribute__((noinline)) int leaf(int a, int b)
{
	return a * b + pick(a);
}

__attribute__((noinline)) int outer(int i)
{
	return leaf(i, i + 1) + bump(i);
}

int main(void)
{
	long s = 0;
	for (int i = 0; i < 4; i++)
		s += outer(i);
	s += spin(5) + cbzfn(0) + cbzfn(5) + litfn(1);
	printf("%ld %d\n", s, counter);
	return 0;
}
