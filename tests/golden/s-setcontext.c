// SPDX-License-Identifier: MIT
/*
 * s-setcontext: setcontext to a new context (makecontext) never returns to
 * its caller; the context's function returns through uc_link to a
 * getcontext of main's stack, where the caller is gone: it was unwound.
 * A setcontext to a getcontext of the same stack is an unwind as well.
 */
#include <ucontext.h>
#include "golden.h"

GOLDEN_SINK;
static ucontext_t back_uc, work_uc, again_uc;
static char work_stack[256 * 1024] __attribute__((aligned(16)));

NOINLINE void work(void)
{
	sink++;
}
NOINLINE void worker(void)
{
	work();
	sink++;
}
NOINLINE void starter(void)
{
	setcontext(&work_uc);
	sink++;
}
NOINLINE void finish(void)
{
	sink++;
}
NOINLINE void jump_back(void)
{
	setcontext(&again_uc);
	sink++;
}
NOINLINE void inner(void)
{
	jump_back();
	sink++;
}

int main(void)
{
	static volatile int started;

	getcontext(&back_uc);
	if (!started) {
		started = 1;
		getcontext(&work_uc);
		work_uc.uc_stack.ss_sp = work_stack;
		work_uc.uc_stack.ss_size = sizeof(work_stack);
		work_uc.uc_link = &back_uc;
		makecontext(&work_uc, worker, 0);
		starter();
	}
	finish();
	static volatile int jumped;
	getcontext(&again_uc);
	if (!jumped) {
		jumped = 1;
		inner();
	}
	finish();
	return 0;
}
