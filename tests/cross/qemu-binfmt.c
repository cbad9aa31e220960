/* The binfmt_misc interpreter the cross shell tests register for a guest
 * architecture (tests/cross/binfmt.bash), built static for the host.
 *
 * Invoked by the kernel with the 'P' flag: argv[1] the guest program's
 * path, argv[2] its original argv[0], then its arguments. It runs
 * QEMU (the host's qemu-user, a dynamically linked program) on it with the
 * loader variables (LD_*) taken out of qemu's own environment and handed
 * to the guest with -E: otherwise the host loader would try to preload the
 * guest's libdynftrace.so into qemu and print an error on the program's
 * stderr at every traced exec. QEMU_LD_PREFIX (or SYSROOT) is the guest's
 * library root. Build: gcc -static -DQEMU='"..."' -DSYSROOT='"..."'. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	if (argc < 3) {
		fputs("qemu-binfmt: run by binfmt_misc with the P flag only\n", stderr);
		return 127;
	}
	size_t ne = 0;
	for (char **e = environ; *e; e++)
		ne++;
	/* qemu -L SYSROOT -0 ARGV0 (-E VAR=VALUE)... PATH ARGS... NULL */
	char **av = calloc(6 + 2 * ne + (size_t)argc, sizeof(*av));
	char **env = calloc(ne + 1, sizeof(*env));
	if (!av || !env) {
		fputs("qemu-binfmt: out of memory\n", stderr);
		return 127;
	}
	size_t n = 0, m = 0;
	av[n++] = QEMU;
	const char *root = getenv("QEMU_LD_PREFIX");
	av[n++] = "-L";
	av[n++] = (char *)(root && *root ? root : SYSROOT);
	av[n++] = "-0";
	av[n++] = argv[2];
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, "LD_", 3) == 0) {
			av[n++] = "-E";
			av[n++] = *e;
		} else {
			env[m++] = *e;
		}
	}
	av[n++] = argv[1];
	for (int i = 3; i < argc; i++)
		av[n++] = argv[i];
	execve(QEMU, av, env);
	perror("qemu-binfmt: " QEMU);
	return 127;
}
