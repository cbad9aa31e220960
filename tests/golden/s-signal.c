// SPDX-License-Identifier: MIT
/* s-signal: a signal handler that runs traced code, nested where it hit. */
#include <signal.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void in_handler(void)
{
	sink++;
}
NOINLINE void handler(int sig)
{
	in_handler();
	sink += sig;
}
NOINLINE void raise_it(void)
{
	raise(SIGUSR1);
	sink++;
}
NOINLINE void after(void)
{
	sink++;
}

int main(void)
{
	signal(SIGUSR1, handler);
	raise_it();
	after();
	return 0;
}
