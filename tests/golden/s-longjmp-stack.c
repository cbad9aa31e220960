// SPDX-License-Identifier: MIT
/*
 * s-longjmp-stack: a coroutine started by makecontext and swapcontext, then
 * switched to and from by setjmp/longjmp between the two stacks: those
 * jumps are context switches. A longjmp within the coroutine's stack is a
 * real unwind. The coroutine is left suspended at the end.
 */
#include <setjmp.h>
#include <ucontext.h>
#include "golden.h"

GOLDEN_SINK;
static ucontext_t main_uc, co_uc;
static jmp_buf main_jb, co_jb, try_jb;
static char co_stack[256 * 1024] __attribute__((aligned(16)));

NOINLINE void to_main(void)
{
	if (!setjmp(co_jb))
		longjmp(main_jb, 1);
	sink++;
}
NOINLINE void fail(void)
{
	sink++;
	longjmp(try_jb, 1);
}
NOINLINE void middle(void)
{
	fail();
	sink++;
}
NOINLINE void attempt(void)
{
	if (!setjmp(try_jb))
		middle();
	sink++;
}
NOINLINE void step(void)
{
	to_main();
	sink++;
}
NOINLINE void coroutine(void)
{
	to_main();
	attempt();
	step();
	sink++;
}
NOINLINE void start(void)
{
	if (!setjmp(main_jb))
		swapcontext(&main_uc, &co_uc);
	sink++;
}
NOINLINE void resume(void)
{
	if (!setjmp(main_jb))
		longjmp(co_jb, 1);
	sink++;
}
NOINLINE void done(void)
{
	sink++;
}

int main(void)
{
	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = co_stack;
	co_uc.uc_stack.ss_size = sizeof(co_stack);
	co_uc.uc_link = &main_uc;
	makecontext(&co_uc, coroutine, 0);
	start();
	resume();
	done();
	return 0;
}
