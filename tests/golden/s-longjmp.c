// SPDX-License-Identifier: MIT
/* s-longjmp: frames left by longjmp end where the jump lands. */
#include <setjmp.h>
#include "golden.h"

GOLDEN_SINK;
static jmp_buf env;

NOINLINE void jumper(void)
{
	sink++;
	longjmp(env, 1);
}
NOINLINE void middle(void)
{
	jumper();
	sink++;
}
NOINLINE void top(void)
{
	middle();
	sink++;
}
NOINLINE void after_jump(void)
{
	sink++;
}

int main(void)
{
	if (!setjmp(env))
		top();
	after_jump();
	return 0;
}
