/* ptrace-hold PID: trace PID (as a debugger would) until killed; for
 * tests/sh/attach.sh, which checks that attach refuses a traced process. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (ptrace(PTRACE_SEIZE, atoi(argv[1]), 0, 0)) {
		perror("PTRACE_SEIZE");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
