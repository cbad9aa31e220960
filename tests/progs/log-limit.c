/* SPDX-License-Identifier: MIT */
/*
 * log-limit.c - the runtime's message limits, driven directly: built with
 * lib/core/log.c alone and -DDFT_LOG_WINDOW_S=1 (tests/sh/log-limit.sh).
 *
 *   log-limit VERBOSE THREADS
 *
 * 1. dft_log 1000 times at one call site ("said once").
 * 2. dft_debug at one call site ("burst"): at least 2 * DFT_LOG_BURST calls
 *    inside one window, then one call in a later window, which must carry
 *    the count of the ones not shown. Deterministic: it loops until the
 *    clock has done what it needs, whatever the machine's load.
 * 3. THREADS threads call dft_debug at one site ("threads") until the clock
 *    has moved through 3 windows.
 * Prints "burst N" and "threads N", the calls made at each site.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

static uint64_t window(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec / DFT_LOG_WINDOW_S;
}

/* One call site for every "burst" call. */
static void burst_line(void)
{
	dft_debug("burst");
}

static int stop;
static unsigned long thread_calls;

static void *hammer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		dft_debug("threads");
		__atomic_fetch_add(&thread_calls, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	dft_verbose = atoi(argv[1]);
	int nthreads = atoi(argv[2]);
	for (int i = 0; i < 1000; i++)
		dft_log("said once");

	unsigned long burst = 0;
	int in_one = 0;
	while (in_one < 2 * DFT_LOG_BURST) {
		uint64_t w = window();
		burst_line();
		burst++;
		in_one = window() == w ? in_one + 1 : 0;
	}
	uint64_t w0 = window();
	while (window() == w0) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL); /* waiting for the clock, not for a thread */
	}
	burst_line();
	burst++;
	printf("burst %lu\n", burst);

	pthread_t th[64];
	if (nthreads > 64)
		nthreads = 64;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, hammer, NULL);
	w0 = window();
	while (window() < w0 + 3) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	printf("threads %lu\n", thread_calls);
	return 0;
}
