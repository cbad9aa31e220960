// SPDX-License-Identifier: MIT
/* exec-child: run by s-forkexec after exec; its own functions. */
#include "golden.h"

GOLDEN_SINK;

NOINLINE void exec_leaf(void)
{
	sink++;
}
NOINLINE void exec_main(void)
{
	exec_leaf();
	sink++;
}

int main(void)
{
	exec_main();
	return 0;
}
