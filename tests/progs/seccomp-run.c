/*
 * seccomp-run CMD [ARGS...]: run CMD under an allow-all seccomp filter, for
 * tests/sh/attach-seccomp.sh (a dynftrace that runs under a filter itself
 * is shown no other process's filters).
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {1, &allow};
	if (argc < 2)
		return 2;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp-run: seccomp");
		return 127;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
