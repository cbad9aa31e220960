// SPDX-License-Identifier: MIT
/* s-daemon: daemon() forks inside start(); the parent _exits there, the
 * child continues start() and main() and returns from both. */
#include <stdlib.h>
#include <unistd.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void leaf(void)
{
	sink++;
}
NOINLINE void serve(void)
{
	leaf();
	leaf();
}
NOINLINE int start(void)
{
	leaf();
	if (daemon(1, 1))
		return -1;
	serve();
	return 0;
}

int main(void)
{
	int r = start();
	if (r == 0)
		leaf();
	return 0;
}
