/* SPDX-License-Identifier: MIT */
/*
 * batch.c - every batch takes exactly 3 syncs (1 on aarch64, whose changes are
 * single words: tests/unit/insn.h), whatever its size.
 *
 * Linked with 100,000 functions from `tests/gen/genfuncs.sh -S 100000` (the
 * only sites of the process). For filters selecting exactly 1, 1,000 and
 * 100,000 functions it registers and unregisters an ops and reads
 * dynftrace_get_stats() around each call: one batch, 3 syncs, that many
 * sites. Filter changes on a registered ops (1,000 -> 100,000 -> 1) are
 * single batches too. A worker thread calls every function meanwhile, so the
 * batches run against live code; its results are checked.
 *
 *   batch [-q]     -q: no worker thread
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <dynftrace/dynftrace.h>
#include "../unit/tap.h"
#include "../unit/insn.h"

extern const unsigned long gen_nfuncs;
extern unsigned long (*const gen_funcs[])(unsigned long);
extern const char *const gen_names[];

static unsigned long hits;
static void cb(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *op,
	       struct dynftrace_regs *regs)
{
	__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
}

static int stop;
static unsigned long worker_bad, worker_calls;
static void *worker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		for (unsigned long i = 0; i < gen_nfuncs; i++) {
			if (gen_funcs[i](i) != i * (2 * i + 3) + i + 1)
				worker_bad++;
		}
		worker_calls += gen_nfuncs;
	}
	return NULL;
}

static struct dynftrace_ops ops = {.func = cb};
static int worker_on;

/* Calls every function once from this thread; returns the callbacks seen.
 * With the worker running, its calls count too: only used without it. */
static unsigned long count_calls(void)
{
	__atomic_store_n(&hits, 0, __ATOMIC_RELAXED);
	for (unsigned long i = 0; i < gen_nfuncs; i++)
		gen_funcs[i](i);
	__asm__ __volatile__("" ::: "memory");
	return __atomic_load_n(&hits, __ATOMIC_RELAXED);
}

/* Runs OP (a description) and checks it was one batch of WANT sites with
 * 3 syncs, leaving ENABLED sites enabled. */
#define BATCH(desc, want, enabled, call)                                                           \
	do {                                                                                       \
		struct dynftrace_stats a, b;                                                       \
		dynftrace_get_stats(&a);                                                           \
		int r_ = (call);                                                                   \
		dynftrace_get_stats(&b);                                                           \
		ok(r_ == 0 && b.batches - a.batches == 1 && b.syncs - a.syncs == TINSN_SYNCS &&    \
		       b.last_batch_sites == (want) && b.sites_enabled == (enabled),               \
		   "%s: %d, %lu batch, %lu syncs, %lu sites (want 1, %d, %lu), %lu enabled, "      \
		   "%.3f ms",                                                                      \
		   desc, r_, b.batches - a.batches, b.syncs - a.syncs, b.last_batch_sites,         \
		   TINSN_SYNCS, (unsigned long)(want), b.sites_enabled,                            \
		   (double)b.last_batch_ns / 1e6);                                                 \
	} while (0)

int main(int argc, char **argv)
{
	worker_on = !(argc > 1 && !strcmp(argv[1], "-q"));
	tap_plan(worker_on ? 16 : 18);
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	unsigned long n = gen_nfuncs;
	ok(st.sites == n && n == 100000, "%lu sites, %lu generated functions", st.sites, n);

	pthread_t th;
	if (worker_on)
		pthread_create(&th, NULL, worker, NULL);

	static const struct {
		const char *glob;
		unsigned long n;
	} sel[] = {
	    {"f_00000", 1},
	    {"*_00[0-9][0-9][0-9]", 1000},
	    {"*", 100000},
	};
	for (size_t k = 0; k < sizeof(sel) / sizeof(sel[0]); k++) {
		char d[96];
		ok(dynftrace_set_filter(&ops, sel[k].glob, 1) == 0, "filter \"%s\"", sel[k].glob);
		snprintf(d, sizeof(d), "register, %lu function%s", sel[k].n,
			 sel[k].n > 1 ? "s" : "");
		BATCH(d, sel[k].n, sel[k].n, dynftrace_register_ops(&ops));
		if (!worker_on) {
			unsigned long h = count_calls();
			ok(h == sel[k].n, "%lu callbacks for %lu calls", h, n);
		}
		snprintf(d, sizeof(d), "unregister, %lu function%s", sel[k].n,
			 sel[k].n > 1 ? "s" : "");
		BATCH(d, sel[k].n, 0, dynftrace_unregister_ops(&ops));
	}

	/* Filter changes on a registered ops are batches too. */
	ok(dynftrace_set_filter(&ops, "*_00[0-9][0-9][0-9]", 1) == 0 &&
	       dynftrace_register_ops(&ops) == 0,
	   "1,000 functions registered");
	BATCH("filter 1,000 -> 100,000", 99000, 100000, dynftrace_set_filter(&ops, "*", 0));
	BATCH("filter 100,000 -> 1", 99999, 1, dynftrace_set_filter(&ops, "g_00001", 1));
	BATCH("unregister", 1, 0, dynftrace_unregister_ops(&ops));

	if (worker_on) {
		__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		diag("worker: %lu calls during the batches", worker_calls);
		ok(worker_bad == 0, "the worker's functions returned the right values (%lu wrong)",
		   worker_bad);
	}
	dynftrace_get_stats(&st);
	diag("%lu traps emulated", st.traps);
	ok(!st.killed && st.syncs == TINSN_SYNCS * st.batches,
	   "not killed (%s), %lu syncs for %lu batches", st.killed ? st.kill_reason : "-", st.syncs,
	   st.batches);
	return tap_done();
}
