/*
 * forkexec: a traced program whose process forks a child that execs the
 * program again, for the system-emulated aarch64 run (tests/cross/system.sh):
 * `dynftrace record` must follow both. Each part calls its own function;
 * the exit status says whether every result was right.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int fe_parent(int x)
{
	return x * 3;
}
__attribute__((noinline)) int fe_child(int x)
{
	return x + 7;
}
__attribute__((noinline)) int fe_execd(int x)
{
	return x - 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "execd") == 0)
		return fe_execd(43) == 42 ? 0 : 1;
	pid_t p = fork();
	if (p == 0) {
		if (fe_child(1) != 8)
			_exit(2);
		execl("/proc/self/exe", argv[0], "execd", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	int r = fe_parent(14);
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	printf("forkexec %d\n", r);
	return r == 42 ? 0 : 1;
}
