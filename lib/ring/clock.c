/* SPDX-License-Identifier: MIT */
/*
 * clock.c - the trace clock: CLOCK_MONOTONIC nanoseconds, read from the
 * architecture's cycle counter scaled by a latch the ring's consumer keeps
 * (ring_fast.h: clk_tsc_read, clk_tsc_to_ns), or from the vDSO until the
 * counter is calibrated and wherever it cannot be trusted.
 *
 * The latch (clk_p[2], clk_seq) is written by the consumer only
 * (clock_tick) and read lock-free by every writer: two copies, the sequence
 * says which one is stable. DYNFTRACE_CLOCK=vdso|tsc forces a source.
 *
 * | field                    | written by               | read by           |
 * |--------------------------|--------------------------|-------------------|
 * | clk_mode                 | ring_init, consumer      | every reader      |
 * | clk_seq, clk_p           | consumer (clk_publish)   | every reader      |
 * | clk_want, clk_calibrating| ring_init (no consumer   | consumer          |
 * |                          | yet), then the consumer  |                   |
 * | clk_tsc0 ... clk_steps   | consumer                 | consumer          |
 * | clk_last_err             | consumer (atomic)        | stats             |
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "ring_fast.h"

HIDDEN uint32_t clk_mode = CLK_VDSO;
HIDDEN uint32_t clk_seq;
HIDDEN struct clk_params clk_p[2] = {{.mult = CLK_MULT_NONE}, {.mult = CLK_MULT_NONE}};
static int clk_want;	    /* -1 vdso forced, 0 auto, 1 tsc forced */
static int clk_calibrating; /* consumer's state: 0 idle, 1 sampling, 2 running */
static uint64_t clk_tsc0, clk_ns0, clk_next, clk_steps;
static uint64_t clk_last_err; /* |error| ns at the last resync, for stats */

uint64_t clock_mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t clock_read(void)
{
	if (likely(__atomic_load_n(&clk_mode, __ATOMIC_ACQUIRE) == CLK_TSC)) {
		uint64_t ns;
		while (unlikely(!clk_tsc_read(&ns)))
			;
		return ns;
	}
	return clock_mono_ns();
}

uint64_t ring_now(void)
{
	return clock_read();
}

/* Latch update: readers always have one stable copy. Consumer only. */
static void clk_publish(const struct clk_params *np)
{
	for (int i = 0; i < 2; i++) {
		__atomic_fetch_add(&clk_seq, 1, __ATOMIC_SEQ_CST); /* readers use the other copy */
		struct clk_params *p = &clk_p[~clk_seq & 1];
		__atomic_store_n(&p->base_tsc, np->base_tsc, __ATOMIC_RELAXED);
		__atomic_store_n(&p->base_ns, np->base_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&p->mult, np->mult, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&clk_seq, 1, __ATOMIC_SEQ_CST);
}

/* One (tsc, CLOCK_MONOTONIC) pair: the tightest of a few bracketed reads. */
static void clk_sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t1 = clk_cycles();
		uint64_t n = clock_mono_ns();
		uint64_t t2 = clk_cycles();
		if (t2 - t1 < best) {
			best = t2 - t1;
			*tsc = t1 + (t2 - t1) / 2;
			*ns = n;
		}
	}
}

/* Consumer: called on every wake-up; returns ns until it wants to run. */
uint64_t clock_tick(void)
{
	if (clk_want < 0 || clk_calibrating == 0)
		return UINT64_MAX;
	uint64_t tsc = 0, ns = clock_mono_ns();
	if (clk_tsc0 && ns < clk_next)
		return clk_next - ns;
	clk_sample(&tsc, &ns);
	if (clk_calibrating == 1 && clk_tsc0 == 0) {
		clk_tsc0 = tsc;
		clk_ns0 = ns;
		uint64_t hz = arch_cycles_hz();
		if (hz) {
			/* The counter says its rate (aarch64: CNTFRQ_EL0): in
			 * use at once, slewed against the vDSO as below. */
			struct clk_params np = {
			    .base_tsc = tsc,
			    .base_ns = ns,
			    .mult = (uint64_t)(((unsigned __int128)1000000000 << 32) / hz)};
			clk_publish(&np);
			__atomic_store_n(&clk_mode, CLK_TSC, __ATOMIC_RELEASE);
			clk_calibrating = 2;
			dft_debug("trace clock: counter at %llu Hz", (unsigned long long)hz);
			clk_next = ns + 20000000;
			return 20000000;
		}
		clk_next = ns + 5000000; /* first rate over 5 ms */
		return 5000000;
	}
	if (tsc <= clk_tsc0 || ns <= clk_ns0) {
		/* TSC going backwards: give up on it. */
		__atomic_store_n(&clk_mode, CLK_VDSO, __ATOMIC_RELEASE);
		struct clk_params none = {.mult = CLK_MULT_NONE};
		clk_publish(&none);
		clk_calibrating = 0;
		dft_debug("trace clock: TSC not monotonic, using clock_gettime");
		return UINT64_MAX;
	}
	/* Rate over the whole run: ns per tick, 32.32. */
	unsigned __int128 num = (unsigned __int128)(ns - clk_ns0) << 32;
	uint64_t rate = (uint64_t)(num / (tsc - clk_tsc0));
	struct clk_params np = {.base_tsc = tsc, .mult = rate};
	if (clk_calibrating == 1) {
		np.base_ns = ns;
		clk_publish(&np);
		__atomic_store_n(&clk_mode, CLK_TSC, __ATOMIC_RELEASE);
		clk_calibrating = 2;
		dft_debug("trace clock: TSC, %.6f ns per tick", (double)rate / 4294967296.0);
	} else {
		const struct clk_params *cur = &clk_p[clk_seq & 1];
		uint64_t now = clk_apply(tsc, cur->base_tsc, cur->base_ns, cur->mult);
		int64_t err = (int64_t)(ns - now);
		__atomic_store_n(&clk_last_err, (uint64_t)(err < 0 ? -err : err), __ATOMIC_RELAXED);
		np.base_ns = now; /* continuous */
		if (err > 1000000 || err < -1000000) {
			np.base_ns = ns; /* far off (host suspend?): step */
		} else {
			/* Slew the error away over the next 2 s, at most 500 ppm. */
			__int128 adj = (__int128)rate * err / 2000000000;
			__int128 lim = (__int128)rate / 2000;
			if (adj > lim)
				adj = lim;
			if (adj < -lim)
				adj = -lim;
			np.mult = (uint64_t)((__int128)rate + adj);
		}
		clk_publish(&np);
	}
	clk_steps++;
	uint64_t since = ns - clk_ns0;
	uint64_t step = since < 100000000 ? 20000000 : since < 1000000000 ? 200000000 : 1000000000;
	clk_next = ns + step;
	return step;
}

void clock_configure(void)
{
	const char *e = dft_getenv("DYNFTRACE_CLOCK");
	clk_want = 0;
	if (e && !strcmp(e, "vdso"))
		clk_want = -1;
	else if (e && !strcmp(e, "tsc"))
		clk_want = 1;
	else if (e && *e)
		dft_log("DYNFTRACE_CLOCK=%s: expected vdso or tsc; choosing", e);
	if (clk_want == 0)
		clk_want = arch_cycles_constant() ? 1 : -1;
	if (clk_want < 0)
		__atomic_store_n(&clk_mode, CLK_VDSO, __ATOMIC_RELEASE);
	else if (!clk_calibrating)
		clk_calibrating = 1;
}

const char *ring_clock_name(void)
{
	return __atomic_load_n(&clk_mode, __ATOMIC_ACQUIRE) == CLK_TSC ? "tsc" : "vdso";
}

uint64_t ring_clock_error_ns(void)
{
	return __atomic_load_n(&clk_last_err, __ATOMIC_RELAXED);
}
