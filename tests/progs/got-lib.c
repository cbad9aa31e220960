/* SPDX-License-Identifier: MIT */
/*
 * got-lib.c - a library got-prog.c dlopens after the GOT hooks are in:
 * it calls sigprocmask through its PLT and takes its address (a GLOB_DAT
 * slot). Built with -z now: both slots are in its RELRO pages.
 */
#include <signal.h>

/* 2 * N calls of sigprocmask through the PLT. */
int got_lib_calls(int n)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	for (int i = 0; i < n; i++)
		if (sigprocmask(SIG_BLOCK, &s, 0) || sigprocmask(SIG_UNBLOCK, &s, 0))
			return -1;
	return 0;
}

/* What its GLOB_DAT slot of sigprocmask holds now. */
void *got_lib_sigprocmask(void)
{
	return (void *)sigprocmask;
}
