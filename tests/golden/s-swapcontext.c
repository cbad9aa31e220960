// SPDX-License-Identifier: MIT
/*
 * s-swapcontext: a generator on a stack of its own (makecontext), resumed
 * by swapcontext. A function that switched away stays open and ends at its
 * return; the generator's function returns through uc_link.
 */
#include <ucontext.h>
#include "golden.h"

GOLDEN_SINK;
static ucontext_t main_uc, gen_uc;
static char gen_stack[256 * 1024] __attribute__((aligned(16)));
static int value;

NOINLINE void yield(int v)
{
	value = v;
	swapcontext(&gen_uc, &main_uc);
	sink++;
}
NOINLINE void produce(int i)
{
	yield(i);
	sink++;
}
NOINLINE void generator(void)
{
	for (int i = 0; i < 2; i++)
		produce(i);
	sink++;
}
NOINLINE int next(void)
{
	swapcontext(&main_uc, &gen_uc);
	sink++;
	return value;
}
NOINLINE void consume(int v)
{
	sink += v;
}
NOINLINE void after(void)
{
	sink++;
}

int main(void)
{
	getcontext(&gen_uc);
	gen_uc.uc_stack.ss_sp = gen_stack;
	gen_uc.uc_stack.ss_size = sizeof(gen_stack);
	gen_uc.uc_link = &main_uc;
	makecontext(&gen_uc, generator, 0);
	for (int i = 0; i < 3; i++)
		consume(next());
	after();
	return 0;
}
