// SPDX-License-Identifier: MIT
/*
 * s-exit: exit() from a nested function. The atexit handler runs inside
 * exit(), so inside the open frames; they stay open to the end of the trace.
 */
#include <stdlib.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void at_exit_handler(void)
{
	sink++;
}
NOINLINE void leave_now(void)
{
	sink++;
	exit(0);
}
NOINLINE void nested(void)
{
	leave_now();
	sink++;
}

int main(void)
{
	atexit(at_exit_handler);
	nested();
	return 1;
}
