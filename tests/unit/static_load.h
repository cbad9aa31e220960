/* SPDX-License-Identifier: MIT */
/*
 * static_load.h - "toggle under load, count exactly in quiet windows" for
 * the static key / static call / tracepoint tests.
 *
 * Each round:
 *   1. load: WORKERS threads call body(LOAD) in a tight loop while the main
 *      thread runs toggle() TOGGLES times (enable/disable/update...);
 *   2. the main thread fixes a state with settle(round) and returns the
 *      number of hits one body(QUIET) call must add under that state;
 *   3. quiet: each worker runs body(QUIET) exactly QUIET_ITERS times;
 *   4. the main thread checks the hit counter against the expectation.
 * Barriers separate the phases, so the quiet counts are exact.
 */
#ifndef DYNFTRACE_STATIC_LOAD_H
#define DYNFTRACE_STATIC_LOAD_H
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define LOAD_WORKERS	 2
#define LOAD_QUIET_ITERS 20000

struct load_test {
	const char *what;
	int rounds, toggles;
	void (*body)(void);		    /* one iteration of the workers */
	void (*toggle)(int i);		    /* one change, load phase */
	unsigned long (*settle)(int round); /* fix a state; expected hits per body() */
	/* internal */
	pthread_barrier_t bar;
	volatile int stop, quit;
	unsigned long load_iters;
};

/* Hits counted by the bodies (atomic adds). */
static unsigned long load_hits;

static void load_hit(unsigned long n)
{
	__atomic_fetch_add(&load_hits, n, __ATOMIC_RELAXED);
}

static void *load_worker(void *arg)
{
	struct load_test *lt = arg;
	for (;;) {
		pthread_barrier_wait(&lt->bar); /* load starts */
		if (lt->quit)
			break;
		unsigned long n = 0;
		while (!__atomic_load_n(&lt->stop, __ATOMIC_ACQUIRE)) {
			lt->body();
			n++;
		}
		__atomic_fetch_add(&lt->load_iters, n, __ATOMIC_RELAXED);
		pthread_barrier_wait(&lt->bar); /* load ends */
		pthread_barrier_wait(&lt->bar); /* quiet starts */
		for (int i = 0; i < LOAD_QUIET_ITERS; i++)
			lt->body();
		pthread_barrier_wait(&lt->bar); /* quiet ends */
	}
	return NULL;
}

/* Returns the number of rounds whose quiet count was wrong (0: pass). */
static int load_run(struct load_test *lt)
{
	pthread_t th[LOAD_WORKERS];
	int bad = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_barrier_init(&lt->bar, NULL, LOAD_WORKERS + 1);
	lt->quit = 0;
	for (int i = 0; i < LOAD_WORKERS; i++)
		pthread_create(&th[i], NULL, load_worker, lt);
	lt->rounds = tap_scaled(lt->rounds);
	for (int r = 0; r < lt->rounds; r++) {
		__atomic_store_n(&lt->stop, 0, __ATOMIC_RELEASE);
		pthread_barrier_wait(&lt->bar);
		for (int i = 0; i < lt->toggles; i++)
			lt->toggle(r * lt->toggles + i);
		__atomic_store_n(&lt->stop, 1, __ATOMIC_RELEASE);
		pthread_barrier_wait(&lt->bar);
		unsigned long per = lt->settle(r);
		__atomic_store_n(&load_hits, 0, __ATOMIC_RELAXED);
		pthread_barrier_wait(&lt->bar);
		pthread_barrier_wait(&lt->bar);
		unsigned long got = __atomic_load_n(&load_hits, __ATOMIC_RELAXED);
		unsigned long want = per * LOAD_WORKERS * LOAD_QUIET_ITERS;
		if (got != want) {
			printf("# %s: round %d: %lu hits in the quiet window, expected %lu\n",
			       lt->what, r, got, want);
			bad++;
		}
	}
	lt->quit = 1;
	pthread_barrier_wait(&lt->bar);
	for (int i = 0; i < LOAD_WORKERS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&lt->bar);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("# %s: %d rounds x %d changes, %lu loaded iterations, %.2f s\n", lt->what,
	       lt->rounds, lt->toggles, lt->load_iters,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	return bad;
}
#endif
