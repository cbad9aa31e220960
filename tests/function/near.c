/* SPDX-License-Identifier: MIT */
/*
 * near.c - calls for the function tracer's events: leaf() from main (its
 * caller near: the 8-byte function_near event), cmp() from the C library's
 * qsort (its caller far: the `function` event with the whole address),
 * and leaf() again from a signal handler (a timer's signal to this
 * thread: events nested in the middle of others). Runs at least ROUNDS rounds and on
 * until 30 ms passed, so that the runtime's TSC clock (calibrated after
 * about 5 ms) has its fast path taken as well as the slow one before it.
 * Prints how many times each function ran; with ROUTES=1, the route of
 * each of its three functions' sites on stderr (public introspection).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dynftrace/dynftrace.h"

#define NOINLINE __attribute__((noinline))
static volatile long sink;
static volatile sig_atomic_t in_handler_calls;
static long leaf_calls, cmp_calls;

NOINLINE long leaf(long x)
{
	return x * 3 + sink;
}

NOINLINE int cmp(const void *a, const void *b)
{
	cmp_calls++;
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

NOINLINE long from_handler(long x)
{
	return x + sink;
}

static void on_alarm(int sig)
{
	(void)sig;
	in_handler_calls++;
	sink += from_handler(in_handler_calls);
}

static int print_route(const struct dynftrace_site_info *si, void *data)
{
	(void)data;
	if (si->func && (!strcmp(si->func, "leaf") || !strcmp(si->func, "cmp") ||
			 !strcmp(si->func, "from_handler")))
		fprintf(stderr, "route %s %s\n", si->func, si->route);
	return 0;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 20;
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	/* to this thread, not to one of the runtime's */
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGALRM};
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm))
		return 2;
	struct itimerspec its = {
	    {0, 1000000},
	    {0, 1000000}}; /* 1 ms: a handler slower than that (ASan) would starve the loop */
	timer_settime(tm, 0, &its, NULL);
	double t0 = now_ms();
	long s = 0;
	for (long r = 0; r < rounds || now_ms() - t0 < 30; r++) {
		for (long i = 0; i < 2000; i++, leaf_calls++)
			s += leaf(i);
		long v[16];
		for (int i = 0; i < 16; i++)
			v[i] = (i * 7919) % 16; /* the same sort every round: the same callers */
		qsort(v, 16, sizeof(v[0]), cmp);
		s += v[0];
	}
	timer_delete(tm);
	printf("leaf %ld\ncmp %ld\nfrom_handler %d\n", leaf_calls, cmp_calls,
	       (int)in_handler_calls);
	if (getenv("ROUTES"))
		dynftrace_for_each_site_info(print_route, NULL);
	return s == 42; /* keep s */
}
