/* SPDX-License-Identifier: MIT */
/*
 * trapper.c - SIGTRAPs with the default disposition, for
 * tests/sh/foreign-trap.sh. Built twice, with and without the runtime; both
 * must end the same way.
 *
 *   trapper int3          int3, SIG_DFL                  -> killed by SIGTRAP
 *   trapper ign-int3      int3 under SIG_IGN (the kernel forces SIG_DFL)
 *   trapper blocked-int3  int3 in a thread blocking every signal
 *   trapper raise         raise(SIGTRAP), SIG_DFL        -> killed by SIGTRAP
 *   trapper ign-raise     raise(SIGTRAP) under SIG_IGN   -> exit 0
 *   trapper traced        calls a traced function, then int3 -> killed
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* the architecture's breakpoint instruction (named int3 below) */
#if defined(__aarch64__)
#define BREAKPOINT "brk #0"
#elif defined(__riscv)
#define BREAKPOINT "ebreak"
#else
#define BREAKPOINT "int3"
#endif

static volatile int sink;
__attribute__((noinline)) int traced_fn(int x)
{
	sink += x;
	return x + 1;
}

static void *blocked(void *arg)
{
	sigset_t all;
	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	__asm__ __volatile__(BREAKPOINT);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	if (!strcmp(m, "int3")) {
		__asm__ __volatile__(BREAKPOINT);
	} else if (!strcmp(m, "ign-int3")) {
		signal(SIGTRAP, SIG_IGN);
		__asm__ __volatile__(BREAKPOINT);
	} else if (!strcmp(m, "blocked-int3")) {
		pthread_t t;
		pthread_create(&t, NULL, blocked, NULL);
		pthread_join(t, NULL);
	} else if (!strcmp(m, "raise")) {
		raise(SIGTRAP);
	} else if (!strcmp(m, "ign-raise")) {
		signal(SIGTRAP, SIG_IGN);
		raise(SIGTRAP);
		return 0;
	} else if (!strcmp(m, "traced")) {
		traced_fn(1);
		__asm__ __volatile__(BREAKPOINT);
	} else {
		fprintf(stderr,
			"usage: trapper int3|ign-int3|blocked-int3|raise|ign-raise|traced\n");
		return 2;
	}
	return 1; /* should have died */
}
