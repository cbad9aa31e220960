// SPDX-License-Identifier: MIT
/*
 * s-forkexec: the child execs another traced program (exec-child, beside
 * this one); its calls go into the same session, named from its own sites.
 */
#include <limits.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void before_fork(void)
{
	sink++;
}
NOINLINE void after_wait(void)
{
	sink++;
}

int main(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	pid_t pid;
	int st;

	if (n <= 0)
		return 1;
	path[n] = 0;
	strcpy(strrchr(path, '/') + 1, "exec-child");
	before_fork();
	pid = fork();
	if (pid == 0) {
		execl(path, path, (char *)0);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	after_wait();
	return !WIFEXITED(st) || WEXITSTATUS(st);
}
