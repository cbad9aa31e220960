/* SPDX-License-Identifier: MIT */
/*
 * got-realrt.c - the runtime itself (argv[1]) dlopened RTLD_LOCAL into a
 * program not linked with it, as `dynftrace attach` loads it: its
 * wrappers, called through dlsym on its handle, must find libc's functions
 * with dlsym(RTLD_NEXT) (the runtime's own dependencies), not themselves
 * nor nothing. Observable: SIGTRAP set blocked through the runtime's
 * sigprocmask and pthread_sigmask is blocked virtually only (the kernel's
 * mask never holds it) and reads back as blocked; its signal() installs a
 * handler libc's sigaction reports. Prints TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int tap_n, tap_fail;

static void check(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++tap_n, what);
	tap_fail += !cond;
}

/* The kernel's mask of this thread. */
static int kernel_blocks(int sig)
{
	unsigned long long m = 0;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof(m));
	return (m >> (sig - 1)) & 1;
}

static void on_usr2(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!h) {
		printf("not ok 1 - dlopen the runtime: %s\n", dlerror());
		return 1;
	}
	typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);
	mask_fn spm = (mask_fn)dlsym(h, "sigprocmask");
	mask_fn ptm = (mask_fn)dlsym(h, "pthread_sigmask");
	sighandler_t (*sig)(int, sighandler_t) =
	    (sighandler_t(*)(int, sighandler_t))dlsym(h, "signal");
	check(spm && ptm && sig && (void *)spm != dlsym(RTLD_DEFAULT, "sigprocmask"),
	      "the runtime's wrappers, not libc's, by its handle");
	if (!spm || !ptm || !sig)
		return 1;
	sigset_t t, old;
	sigemptyset(&t);
	sigaddset(&t, SIGTRAP);
	int r = spm(SIG_BLOCK, &t, NULL);
	check(r == 0 && !kernel_blocks(SIGTRAP) && spm(SIG_BLOCK, NULL, &old) == 0 &&
		  sigismember(&old, SIGTRAP) == 1,
	      "sigprocmask: SIGTRAP blocked virtually, through libc's sigprocmask");
	r = ptm(SIG_UNBLOCK, &t, &old);
	check(r == 0 && sigismember(&old, SIGTRAP) == 1 && ptm(SIG_BLOCK, NULL, &old) == 0 &&
		  sigismember(&old, SIGTRAP) == 0 && !kernel_blocks(SIGTRAP),
	      "pthread_sigmask: unblocked, through libc's pthread_sigmask");
	sigaddset(&t, SIGUSR1);
	r = ptm(SIG_BLOCK, &t, NULL);
	check(r == 0 && kernel_blocks(SIGUSR1) && !kernel_blocks(SIGTRAP),
	      "other signals are blocked for real");
	ptm(SIG_UNBLOCK, &t, NULL);
	struct sigaction sa;
	check(sig(SIGUSR2, on_usr2) != SIG_ERR && sigaction(SIGUSR2, NULL, &sa) == 0 &&
		  sa.sa_handler == on_usr2,
	      "signal: through the runtime's sigaction to libc's");
	/* The runtime keeps its SIGTRAP handler and shows the program its own:
	 * its signal() reaches its sigaction wrapper, not libc's (a plain
	 * call to sigaction would bind to libc's under RTLD_LOCAL). */
	int (*act)(int, const struct sigaction *, struct sigaction *) =
	    (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(h, "sigaction");
	struct sa_pair {
		struct sigaction prog, kernel;
	} p;
	check(act && sig(SIGTRAP, on_usr2) != SIG_ERR && act(SIGTRAP, NULL, &p.prog) == 0 &&
		  sigaction(SIGTRAP, NULL, &p.kernel) == 0 && p.prog.sa_handler == on_usr2 &&
		  p.kernel.sa_handler != on_usr2 && p.kernel.sa_handler != SIG_DFL,
	      "signal(SIGTRAP) goes through the runtime's sigaction: its trap handler stays");
	printf("1..%d\n", tap_n);
	return tap_fail != 0;
}
