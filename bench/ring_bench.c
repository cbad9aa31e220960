/* SPDX-License-Identifier: MIT */
/*
 * ring_bench.c - cost of the trace clock and of the per-thread ring buffer
 * (lib/ring/ring.c, compiled in: its symbols are hidden in the runtime).
 * Prints figures; never fails a test. bench/ring_bench.sh builds and runs it.
 *
 *   ring_bench pairs DIR [PAIRS [REPS [PAGES]]]   (PAGES of 64 KiB; 0: default)
 *	One thread writes PAIRS function_graph-like event pairs (entry with a
 *	4-byte function id, then exit) per repetition, while the consumer
 *	drains to DIR/ctf. Prints the median ns per pair, an empty loop for
 *	reference, bytes per pair on disk, and the events lost.
 *   ring_bench clock [SECONDS]
 *	Cost of rdtsc, clock_gettime(CLOCK_MONOTONIC) and ring_now(); then,
 *	every 10 ms for SECONDS, the TSC clock's error against
 *	CLOCK_MONOTONIC (tightest of 5 bracketed reads).
 * Env DYNFTRACE_CLOCK=vdso|tsc selects ring_now()'s source.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "ring.h"

/* The core's thread state, which the ring's consumer thread marks (hooks.h):
 * defined by the runtime, here by ring.c's own program. */
__thread struct dft_thread dft_self;

static uint64_t mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void wait_clock(void)
{
	const char *want = getenv("DYNFTRACE_CLOCK");
	if (want && !strcmp(want, "vdso"))
		return;
	for (int i = 0; i < 2000 && strcmp(ring_clock_name(), "tsc"); i++) {
		struct timespec t = {0, 1000000};
		nanosleep(&t, NULL);
	}
}

static __attribute__((noinline)) void pairs_loop(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t ts;
		uint32_t f = (uint32_t)i & 1023;
		uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
		if (p) {
			memcpy(p, &f, 4);
			ring_event_end(p);
		}
		p = ring_event_begin(RING_EV_EXIT, 0, &ts);
		if (p)
			ring_event_end(p);
	}
}

static __attribute__((noinline)) void empty_loop(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		__asm__ __volatile__("" ::"r"(i) : "memory");
}

struct sum {
	uint64_t events, lost, bytes;
};

static void stat_cb(const struct ring_thread_stats *st, void *data)
{
	struct sum *s = data;
	s->events += st->events;
	s->lost += st->lost;
	s->bytes += st->bytes;
}

static int bench_pairs(const char *dir, uint64_t n, int reps, size_t pages)
{
	char ctf[4096];
	snprintf(ctf, sizeof(ctf), "%s/ctf", dir);
	mkdir(dir, 0755);
	mkdir(ctf, 0755);
	struct ring_config c = {.ctf_dir = ctf, .pages = pages};
	int err = ring_init(&c);
	if (err) {
		fprintf(stderr, "ring_init: %s\n", strerror(-err));
		return 1;
	}
	wait_clock();
	double t_ring[64], t_empty[64];
	if (reps > 64)
		reps = 64;
	pairs_loop(1000); /* the buffer exists */
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = mono();
		empty_loop(n);
		uint64_t t1 = mono();
		pairs_loop(n);
		uint64_t t2 = mono();
		t_empty[r] = (double)(t1 - t0) / (double)n;
		t_ring[r] = (double)(t2 - t1) / (double)n;
	}
	ring_shutdown();
	struct sum s = {0};
	ring_for_each_thread(stat_cb, &s);
	uint64_t attempted = 2 * (n * (uint64_t)reps + 1000);
	double lo = t_ring[0], hi = t_ring[0];
	for (int r = 1; r < reps; r++) {
		lo = t_ring[r] < lo ? t_ring[r] : lo;
		hi = t_ring[r] > hi ? t_ring[r] : hi;
	}
	printf("| %s | %zu KiB | %s | %.1f | %.1f-%.1f | %.1f | %.2f | %llu of %llu |\n", dir,
	       (pages ? pages : RING_DEFAULT_PAGES) * RING_DEFAULT_PAGE_SIZE / 1024,
	       ring_clock_name(), median(t_ring, reps), lo, hi, median(t_empty, reps),
	       (double)s.bytes / (double)(attempted / 2 - s.lost / 2), (unsigned long long)s.lost,
	       (unsigned long long)attempted);
	return 0;
}

static __attribute__((noinline)) double cost(int which, uint64_t n)
{
	volatile uint64_t sink = 0;
	uint64_t t0 = mono();
	for (uint64_t i = 0; i < n; i++) {
		struct timespec t;
		switch (which) {
		case 0:
			sink += __builtin_ia32_rdtsc();
			break;
		case 1:
			clock_gettime(CLOCK_MONOTONIC, &t);
			sink += (uint64_t)t.tv_nsec;
			break;
		default:
			sink += ring_now();
			break;
		}
	}
	uint64_t t1 = mono();
	__asm__ __volatile__("" ::"r"(sink));
	return (double)(t1 - t0) / (double)n;
}

static int64_t clock_err(void)
{
	int64_t best = INT64_MAX;
	uint64_t bestw = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t a = mono(), r = ring_now(), b = mono();
		if (b - a < bestw) {
			bestw = b - a;
			/* error against the middle of the bracket */
			best = (int64_t)(r - (a + (b - a) / 2));
		}
	}
	return best;
}

static int bench_clock(double seconds)
{
	struct ring_config c = {.ctf_dir = "/tmp"};
	char dir[] = "/tmp/ring_bench.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	c.ctf_dir = dir;
	uint64_t start = mono();
	int err = ring_init(&c);
	if (err) {
		fprintf(stderr, "ring_init: %s\n", strerror(-err));
		return 1;
	}
	wait_clock();
	uint64_t calibrated = mono() - start;
	double r[3][7];
	for (int k = 0; k < 7; k++)
		for (int w = 0; w < 3; w++)
			r[w][k] = cost(w, 2000000);
	printf("clock costs (median of 7 x 2M reads, ns): rdtsc %.1f, clock_gettime %.1f, "
	       "ring_now (%s) %.1f\n",
	       median(r[0], 7), median(r[1], 7), ring_clock_name(), median(r[2], 7));
	printf("ring_now source: %s after %.1f ms\n", ring_clock_name(), (double)calibrated / 1e6);
	/* error against CLOCK_MONOTONIC, by time since ring_init */
	uint64_t bounds[] = {100000000, 1000000000, 10000000000ull, UINT64_MAX};
	int64_t worst[4] = {0};
	uint64_t nsamp[4] = {0};
	uint64_t end = start + (uint64_t)(seconds * 1e9);
	for (uint64_t now = mono(); now < end; now = mono()) {
		int64_t e = clock_err();
		int b = 0;
		while (now - start >= bounds[b])
			b++;
		if ((e < 0 ? -e : e) > (worst[b] < 0 ? -worst[b] : worst[b]))
			worst[b] = e;
		nsamp[b]++;
		struct timespec t = {0, 10000000};
		nanosleep(&t, NULL);
	}
	const char *names[] = {"0-100 ms", "0.1-1 s", "1-10 s", "10 s+"};
	printf("worst error of ring_now() against CLOCK_MONOTONIC (ns), by time since ring_init:");
	for (int b = 0; b < 4; b++)
		if (nsamp[b])
			printf(" %s: %+lld (%llu samples);", names[b], (long long)worst[b],
			       (unsigned long long)nsamp[b]);
	printf(" last resync: %llu ns\n", (unsigned long long)ring_clock_error_ns());
	ring_shutdown();
	char md[64];
	snprintf(md, sizeof(md), "%s/metadata", dir);
	unlink(md);
	rmdir(dir);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "pairs"))
		return bench_pairs(argv[2], argc > 3 ? strtoull(argv[3], NULL, 0) : 20000000,
				   argc > 4 ? atoi(argv[4]) : 7,
				   argc > 5 ? strtoul(argv[5], NULL, 0) : 0);
	if (argc >= 2 && !strcmp(argv[1], "clock"))
		return bench_clock(argc > 2 ? atof(argv[2]) : 5);
	fprintf(
	    stderr,
	    "usage: ring_bench pairs DIR [PAIRS [REPS [PAGES]]] | ring_bench clock [SECONDS]\n");
	return 2;
}
