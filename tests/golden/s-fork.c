// SPDX-License-Identifier: MIT
/* s-fork: the child's calls go into the same session, nested in the
 * frames it continues (main). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void before(void)
{
	sink++;
}
NOINLINE void child_leaf(void)
{
	sink++;
}
NOINLINE void child_work(void)
{
	child_leaf();
	sink++;
}
NOINLINE void after(void)
{
	sink++;
}

int main(void)
{
	pid_t pid;
	int st;

	before();
	pid = fork();
	if (pid == 0) {
		child_work();
		exit(0);
	}
	waitpid(pid, &st, 0);
	after();
	return 0;
}
