/* SPDX-License-Identifier: MIT */
/*
 * core_bench.c - figures for the core runtime; run by
 * bench/core.sh, which builds it. Not built with the trace flags itself:
 * the traced code is core_work.c (inst_*, with sites) next to the same code
 * built without them (plain_*), and optionally 100,000 generated functions
 * (tests/gen/genfuncs.sh -S) for the batch figures.
 *
 *   core_bench calls REPS N      ns per call of inst_leaf: sites NOP, one ops
 *                                (direct), two ops (list function), two ops
 *                                of which one wants the function; an empty
 *                                callback. Modes interleaved, REPS loops of N.
 *   core_bench disabled REPS N F ns per call (loop of N) and ms for fib(F):
 *                                disabled sites (inst_) against no sites
 *                                (plain_), interleaved
 *   core_bench cg-inst|cg-plain N F   run the loop and fib once, inside
 *                                run_inst/run_plain (for callgrind's
 *                                --toggle-collect)
 *   core_bench big REPS          enable/disable all 100,000 generated
 *                                functions: API wall time, batch time, syncs;
 *                                idle and with a thread calling them
 *
 * Output: lines "KEY median min max" (ns, or ms where the key says so).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dynftrace/dynftrace.h>

#include "bench_stat.h"

unsigned long inst_leaf(unsigned long), inst_loop(unsigned long), inst_fib(unsigned long);
unsigned long plain_leaf(unsigned long), plain_loop(unsigned long), plain_fib(unsigned long);

/* Present only in the binary linked with the generated functions. */
extern const unsigned long gen_nfuncs __attribute__((weak));
extern unsigned long (*const gen_funcs[])(unsigned long) __attribute__((weak));

static volatile unsigned long sink;

static void empty_cb(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *op,
		     struct dynftrace_regs *regs)
{
	(void)ip;
	(void)parent_ip;
	(void)op;
	(void)regs;
}

static void report(const char *key, double *v, int n)
{
	double med = sort_median(v, n);
	printf("%s %.3f %.3f %.3f\n", key, med, v[0], v[n - 1]);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "core_bench: %s failed: %d\n", what, err);
	exit(1);
}

/* ---- per-call cost ------------------------------------------------------ */

static struct dynftrace_ops ops1 = {.func = empty_cb}, ops2 = {.func = empty_cb};

enum { M_NOP, M_ONE, M_TWO, M_TWO_ONE, M_COUNT };
static const char *const mode_key[M_COUNT] = {"call_nop", "call_one_ops", "call_two_ops",
					      "call_two_ops_one_wants"};

static void set_mode(int m)
{
	int err;
	dynftrace_unregister_ops(&ops1);
	dynftrace_unregister_ops(&ops2);
	if (m == M_NOP)
		return;
	if ((err = dynftrace_register_ops(&ops1)))
		die("register", err);
	if (m == M_ONE)
		return;
	if ((err = dynftrace_set_filter(&ops2, m == M_TWO ? "inst_leaf" : "inst_fib", 1)))
		die("set_filter", err);
	if ((err = dynftrace_register_ops(&ops2)))
		die("register", err);
}

static int bench_calls(int reps, unsigned long n)
{
	double *v[M_COUNT];
	int err;
	if ((err = dynftrace_set_filter(&ops1, "inst_leaf", 1)))
		die("set_filter", err);
	for (int m = 0; m < M_COUNT; m++)
		v[m] = calloc((size_t)reps, sizeof(double));
	sink += inst_loop(n / 10); /* warm up */
	for (int r = 0; r < reps; r++) {
		for (int m = 0; m < M_COUNT; m++) {
			set_mode(m);
			double t0 = now_ns();
			sink += inst_loop(n);
			v[m][r] = (now_ns() - t0) / (double)n;
		}
	}
	set_mode(M_NOP);
	for (int m = 0; m < M_COUNT; m++)
		report(mode_key[m], v[m], reps);
	return 0;
}

/* ---- disabled sites against no sites ------------------------------------ */

static int bench_disabled(int reps, unsigned long n, unsigned long f)
{
	double *li = calloc((size_t)reps, sizeof(double)),
	       *lp = calloc((size_t)reps, sizeof(double));
	double *fi = calloc((size_t)reps, sizeof(double)),
	       *fp = calloc((size_t)reps, sizeof(double));
	sink += inst_loop(n / 10) + plain_loop(n / 10);
	for (int r = 0; r < reps; r++) {
		double t0 = now_ns();
		sink += inst_loop(n);
		double t1 = now_ns();
		sink += plain_loop(n);
		double t2 = now_ns();
		sink += inst_fib(f);
		double t3 = now_ns();
		sink += plain_fib(f);
		double t4 = now_ns();
		li[r] = (t1 - t0) / (double)n;
		lp[r] = (t2 - t1) / (double)n;
		fi[r] = (t3 - t2) / 1e6;
		fp[r] = (t4 - t3) / 1e6;
	}
	report("loop_disabled_sites", li, reps);
	report("loop_no_sites", lp, reps);
	report("fib_disabled_sites_ms", fi, reps);
	report("fib_no_sites_ms", fp, reps);
	return 0;
}

__attribute__((noinline)) void run_inst(unsigned long n, unsigned long f)
{
	sink += inst_loop(n) + inst_fib(f);
}

__attribute__((noinline)) void run_plain(unsigned long n, unsigned long f)
{
	sink += plain_loop(n) + plain_fib(f);
}

/* ---- enabling and disabling 100,000 sites -------------------------------- */

static int stop;
static void *busy(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		for (unsigned long i = 0; i < gen_nfuncs; i++)
			sink += gen_funcs[i](i);
	return NULL;
}

static int bench_big(int reps)
{
	if (!&gen_nfuncs) {
		fprintf(stderr, "core_bench big: not linked with generated functions\n");
		return 1;
	}
	struct dynftrace_ops ops = {.func = empty_cb};
	int err;
	/* genfuncs names: [fgh]_ and digits; nothing else here matches */
	if ((err = dynftrace_set_filter(&ops, "[fgh]_[0-9]*", 1)))
		die("set_filter", err);
	double *v[8];
	for (int k = 0; k < 8; k++)
		v[k] = calloc((size_t)reps, sizeof(double));
	unsigned long sites = 0, syncs_bad = 0;
	pthread_t th;
	for (int load = 0; load < 2; load++) {
		if (load) {
			stop = 0;
			pthread_create(&th, NULL, busy, NULL);
		}
		for (int r = 0; r < reps; r++) {
			struct dynftrace_stats a, b, c;
			dynftrace_get_stats(&a);
			double t0 = now_ns();
			if ((err = dynftrace_register_ops(&ops)))
				die("register", err);
			double t1 = now_ns();
			dynftrace_get_stats(&b);
			if ((err = dynftrace_unregister_ops(&ops)))
				die("unregister", err);
			double t2 = now_ns();
			dynftrace_get_stats(&c);
			v[4 * load + 0][r] = (t1 - t0) / 1e6;
			v[4 * load + 1][r] = (double)b.last_batch_ns / 1e6;
			v[4 * load + 2][r] = (t2 - t1) / 1e6;
			v[4 * load + 3][r] = (double)c.last_batch_ns / 1e6;
			sites = b.last_batch_sites;
			/* relocated entries: one atomic store each, one sync */
			unsigned long want = getenv("DYNFTRACE_PATCH") ? 1 : 3;
			syncs_bad += (b.syncs - a.syncs != want) + (c.syncs - b.syncs != want) +
				     (b.batches - a.batches != 1) + (c.batches - b.batches != 1);
		}
		if (load) {
			__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
		}
	}
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	printf("big_sites %lu %lu %lu\n", sites, sites, sites);
	printf("big_ops_not_3_syncs %lu %lu %lu\n", syncs_bad, syncs_bad, syncs_bad);
	static const char *const keys[8] = {
	    "enable_api_ms",	   "enable_batch_ms",	    "disable_api_ms",
	    "disable_batch_ms",	   "enable_api_busy_ms",    "enable_batch_busy_ms",
	    "disable_api_busy_ms", "disable_batch_busy_ms",
	};
	for (int k = 0; k < 8; k++)
		report(keys[k], v[k], reps);
	printf("big_traps %lu %lu %lu\n", st.traps, st.traps, st.traps);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int reps = argc > 2 ? atoi(argv[2]) : 11;
	if (!strcmp(m, "calls"))
		return bench_calls(reps, argc > 3 ? strtoul(argv[3], NULL, 0) : 10000000UL);
	if (!strcmp(m, "disabled"))
		return bench_disabled(reps, argc > 3 ? strtoul(argv[3], NULL, 0) : 10000000UL,
				      argc > 4 ? strtoul(argv[4], NULL, 0) : 32);
	if (!strcmp(m, "cg-inst") || !strcmp(m, "cg-plain")) {
		unsigned long n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1000000UL;
		unsigned long f = argc > 3 ? strtoul(argv[3], NULL, 0) : 25;
		if (!strcmp(m, "cg-inst"))
			run_inst(n, f);
		else
			run_plain(n, f);
		return 0;
	}
	if (!strcmp(m, "big"))
		return bench_big(reps);
	fprintf(stderr, "usage: core_bench calls|disabled|cg-inst|cg-plain|big ...\n");
	return 2;
}
