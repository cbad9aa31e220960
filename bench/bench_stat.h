/* SPDX-License-Identifier: MIT */
/* bench_stat.h - the clock and the median the benchmark drivers share
 * (core_bench.c, ops_table.c). */
#ifndef DYNFTRACE_BENCH_STAT_H
#define DYNFTRACE_BENCH_STAT_H

#include <stdlib.h>
#include <time.h>

static inline double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sort the N samples of V (so V[0] is the least, V[N - 1] the most) and
 * return their median. */
static inline double sort_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
