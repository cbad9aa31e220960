// SPDX-License-Identifier: MIT
/* s-sleep: a call that sleeps 20 ms (golden.sh checks the duration too). */
#include <time.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void nap(void)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	nanosleep(&ts, 0);
	sink++;
}
NOINLINE void busy(void)
{
	sink++;
}

int main(void)
{
	busy();
	nap();
	busy();
	return 0;
}
