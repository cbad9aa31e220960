/* SPDX-License-Identifier: MIT */
/*
 * load.c - route transitions under load (run by
 * tests/sh/routes-load.sh).
 *
 * Two worker threads call the functions of both builds (funcs.c: co_* with
 * CALL_OPS literals, tr_* without) in a tight loop. The main thread takes
 * random steps, each one API call:
 *   - register or unregister one of the ops A, B, C;
 *   - give one of them another filter from a pool of overlapping globs;
 *   - dynftrace_set_routes() with one of the four masks.
 * A fourth ops, K, selects co_keep and tr_keep and stays registered. C has
 * DYNFTRACE_OPS_FL_GPR_ONLY (its callback, load_gpr.c, is built for
 * general registers only): its per-ops routes are the light bodies (on
 * aarch64 and riscv64 copies that jump straight to the full ones).
 *
 * After every step the sites are compared with a model (tests/routes/
 * common.h): route, reference count, owning ops, literal value, the code at
 * the site, and the consistency of the call targets. Each site's route
 * change is counted in a transition matrix; the run goes on until every
 * possible ordered pair of route classes {nop, list, tramp/ops, call_ops}
 * was seen on every site (or a step/time budget runs out, below). nop <-> list is
 * not required: with routes 0, or with other ops registered, one ops'
 * site is on the list (it may go there in one step), but otherwise one API
 * call moves a site's reference count by one, and list needs two.
 *
 * Every 8th step is a quiet window: the workers stop at a barrier, run
 * BURST calls of every function each, and stop again; the callback counts
 * of every ops for every function must then be exact. K's counts must be
 * exact over the whole run as well (co_keep and tr_keep never lose their
 * tracer, whatever their route does).
 *
 * At least ROUTES_MIN_STEPS steps (default 3000), then until the pairs are
 * all seen, or ROUTES_SECONDS (default 30) have passed with the pairs all
 * seen, or four times that. ROUTES_SEED (default 1) seeds the steps.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"

enum { NWORK = 2, NOPS = 4, OPS_GPR = 2, OPS_K = 3, BURST = 300 };

static struct dynftrace_ops ops[NOPS];
static const char *const ops_name[NOPS] = {"A", "B", "C", "K"};
static const char *const pool[] = {
    "*_f0",  "*_f[01]", "*_f[12]", "*_f[0-3]",	  "*_f3",    "co_f*",
    "tr_f*", "*_f[02]", "*_keep",  "*_[fk][1e]*", "*_f[13]", "co_[fk]*",
};
#define NPOOL ((int)(sizeof(pool) / sizeof(pool[0])))

/* callback counts: [ops][function], plus callbacks at unknown addresses;
 * also written by load_gpr_cb (load_gpr.c) */
unsigned long counts[NOPS][NFUNC];
unsigned long unknown_ip;
unsigned long site_ip[NFUNC];
void load_gpr_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		 struct dynftrace_regs *regs);

static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
	       struct dynftrace_regs *regs)
{
	(void)pip, (void)regs;
	long o = (long)op->private;
	for (int i = 0; i < NFUNC; i++)
		if (site_ip[i] == ip) {
			__atomic_fetch_add(&counts[o][i], 1, __ATOMIC_RELAXED);
			return;
		}
	__atomic_fetch_add(&unknown_ip, 1, __ATOMIC_RELAXED);
}

/* ---- workers ------------------------------------------------------------ */

static int stop, pause_req;
static pthread_barrier_t bar;
static unsigned long wrong_result;
static unsigned long calls[NWORK][NFUNC]; /* per worker, read after join */

static void call_all(int w, unsigned long x)
{
	for (int i = 0; i < NFUNC; i++) {
		unsigned long (*volatile f)(unsigned long) = rt_fn[i];
		if (f(x) != routes_expect(RT_FN_KIND(i), x))
			__atomic_fetch_add(&wrong_result, 1, __ATOMIC_RELAXED);
		calls[w][i]++;
	}
}

static void *worker(void *arg)
{
	int w = (int)(long)arg;
	unsigned long x = (unsigned long)w << 40;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE)) {
			pthread_barrier_wait(&bar); /* 1: all paused */
			pthread_barrier_wait(&bar); /* 2: go for the burst */
			for (int k = 0; k < BURST; k++)
				call_all(w, x++);
			pthread_barrier_wait(&bar); /* 3: burst done */
			pthread_barrier_wait(&bar); /* 4: main checked, pause_req cleared */
			continue;
		}
		call_all(w, x++);
	}
	return NULL;
}

/* ---- the model ---------------------------------------------------------- */

static int reg[NOPS];
static const char *glob_of[NOPS];
static unsigned mask;
static struct rt_snap prev, cur;
static unsigned long trans[NFUNC][NST][NST];
static int mismatches;

/* Compare CUR with the model; report the first few differences. */
static void check_model(int step)
{
	static struct dynftrace_ops *const opp[NOPS] = {&ops[0], &ops[1], &ops[2], &ops[3]};
	unsigned long common = 0, callops[2] = {0, 0}, tramp_of[NOPS] = {0};
	int bad = 0;
	for (int i = 0; i < NFUNC; i++) {
		const struct rt_site *s = &cur.s[i];
		struct dynftrace_ops *owner;
		int ref, want = rt_model(i, opp, reg, glob_of, NOPS, mask, &owner, &ref);
		const char *why = NULL;
		if (s->st != want)
			why = "route";
		else if (s->refcount != ref)
			why = "refcount";
		else if (s->enabled != (want != ST_NOP))
			why = "enabled";
		else if (s->ops != owner)
			why = "owning ops";
		else if (!rt_code_ok(s))
			why = "code at the site";
		else if (rt_lit_wrong(s, want, ref, owner, opp, NOPS))
			why = rt_lit_wrong(s, want, ref, owner, opp, NOPS);
		if (!why && s->enabled) {
			unsigned long *want_t = NULL;
			if (s->st == ST_LIST || s->st == ST_OPS)
				want_t = &common;
			else if (s->st == ST_CALLOPS) /* the GPR_ONLY ops alone: light body */
				want_t = &callops[ref == 1 && owner == &ops[OPS_GPR]];
			else if (s->st == ST_TRAMP)
				want_t = &tramp_of[(long)owner->private];
			if (want_t && !*want_t)
				*want_t = s->target;
			else if (want_t && *want_t != s->target)
				why = "call target differs from another site's of the same route";
		}
		if (why) {
			bad++;
			if (mismatches + bad <= 5)
				diag("step %d: %s: %s is wrong: route %s (want %s), ref %d (want "
				     "%d), "
				     "ops %p (want %p), literal %#lx",
				     step, rt_name[i], why, st_name[s->st], st_name[want],
				     s->refcount, ref, (void *)s->ops, (void *)owner, s->lit_val);
		}
	}
	/* Distinct routes never share a target; distinct ops never share a stub;
	 * the GPR_ONLY ops' stub leads to another body than the others', and
	 * its CALL_OPS sites call another body than the others'. (On aarch64
	 * and riscv64 the light bodies are copies that jump straight to the
	 * full ones, lib/arch/{aarch64,riscv64}/tramp.S: still their own
	 * addresses in the region, which is what is checked here.) */
	unsigned long body[2] = {0, 0};
	int tbad = 0;
	for (int o = 0; o < NOPS; o++) {
		if (!tramp_of[o])
			continue;
		unsigned long b = (unsigned long)tinsn_stub_body((const void *)tramp_of[o]);
		int g = o == OPS_GPR;
		if (!b || (body[g] && body[g] != b) || b == body[!g])
			tbad++;
		body[g] = b;
	}
	for (int o = 0; o < NOPS; o++) {
		if (tramp_of[o] && (tramp_of[o] == common || tramp_of[o] == callops[0] ||
				    tramp_of[o] == callops[1]))
			tbad++;
		for (int p = o + 1; p < NOPS; p++)
			if (tramp_of[o] && tramp_of[o] == tramp_of[p])
				tbad++;
	}
	if (common && (common == callops[0] || common == callops[1]))
		tbad++;
	if (callops[0] && callops[0] == callops[1])
		tbad++;
	if (tbad && mismatches + bad < 5)
		diag("step %d: %d shared call targets or wrong stub bodies: list/ops %#lx, "
		     "call_ops %#lx, light call_ops %#lx, stubs %#lx %#lx %#lx %#lx, bodies %#lx "
		     "(light %#lx)",
		     step, tbad, common, callops[0], callops[1], tramp_of[0], tramp_of[1],
		     tramp_of[2], tramp_of[3], body[0], body[1]);
	bad += tbad;
	mismatches += bad;
}

/* Required class pairs for site I: what its build and K allow. */
static int pair_possible(int i, int a, int b)
{
	int co = RT_IS_CO(i), keep = RT_FN_KIND(i) == 4, late = RT_FN_KIND(i) == 5;
	if (a == b || late)
		return 0;
	if ((a == ST_NOP && b == ST_LIST) || (a == ST_LIST && b == ST_NOP))
		return 0; /* the reference count moves by one per step */
	if (keep && (a == ST_NOP || b == ST_NOP))
		return 0; /* K keeps it */
	if (!co && (a == ST_CALLOPS || b == ST_CALLOPS))
		return 0;
	return 1;
}

static int missing_pairs(int report)
{
	int miss = 0;
	for (int i = 0; i < NFUNC; i++) {
		for (int a = ST_NOP; a <= ST_CALLOPS; a++) {
			if (a == ST_TRAMP)
				continue;
			for (int b = ST_NOP; b <= ST_CALLOPS; b++) {
				if (b == ST_TRAMP || !pair_possible(i, a, b))
					continue;
				unsigned long n = trans[i][a][b];
				if (a == ST_OPS)
					n += trans[i][ST_TRAMP][b];
				if (b == ST_OPS)
					n += trans[i][a][ST_TRAMP];
				if (a == ST_OPS && b == ST_OPS)
					n = 0;
				if (!n) {
					miss++;
					if (report && miss <= 8)
						diag("%s: never went %s -> %s", rt_name[i],
						     a == ST_OPS ? "tramp/ops" : st_name[a],
						     b == ST_OPS ? "tramp/ops" : st_name[b]);
				}
			}
		}
	}
	return miss;
}

static void record_transitions(void)
{
	for (int i = 0; i < NFUNC; i++)
		if (prev.s[i].st != cur.s[i].st)
			trans[i][prev.s[i].st][cur.s[i].st]++;
	prev = cur;
}

/* ---- quiet windows -------------------------------------------------------- */

static int windows, window_bad;

static void quiet_window(int step)
{
	static struct dynftrace_ops *const opp[NOPS] = {&ops[0], &ops[1], &ops[2], &ops[3]};
	unsigned long before[NOPS][NFUNC];
	__atomic_store_n(&pause_req, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&bar); /* 1 */
	for (int o = 0; o < NOPS; o++)
		for (int i = 0; i < NFUNC; i++)
			before[o][i] = __atomic_load_n(&counts[o][i], __ATOMIC_RELAXED);
	pthread_barrier_wait(&bar); /* 2 */
	pthread_barrier_wait(&bar); /* 3 */
	int bad = 0;
	for (int o = 0; o < NOPS; o++) {
		for (int i = 0; i < NFUNC; i++) {
			struct dynftrace_ops *owner;
			int ref;
			rt_model(i, opp, reg, glob_of, NOPS, mask, &owner, &ref);
			int wants = reg[o] && (!glob_of[o] || !fnmatch(glob_of[o], rt_name[i], 0));
			unsigned long got =
			    __atomic_load_n(&counts[o][i], __ATOMIC_RELAXED) - before[o][i];
			unsigned long exp = wants ? (unsigned long)NWORK * BURST : 0;
			if (got != exp) {
				bad++;
				if (window_bad + bad <= 5)
					diag("step %d, quiet window: ops %s got %lu callbacks for "
					     "%s, "
					     "want %lu (route %s, mask %u)",
					     step, ops_name[o], got, rt_name[i], exp,
					     st_name[cur.s[i].st], mask);
			}
		}
	}
	window_bad += bad;
	windows++;
	__atomic_store_n(&pause_req, 0, __ATOMIC_RELEASE);
	pthread_barrier_wait(&bar); /* 4 */
}

/* ---- main ----------------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int site_ip_cb(const struct dynftrace_site_info *si, void *data)
{
	(void)data;
	for (int i = 0; si->func && i < NFUNC; i++)
		if (!strcmp(si->func, rt_name[i]))
			site_ip[i] = si->ip;
	return 0;
}

int main(void)
{
	const unsigned masks[4] = {DYNFTRACE_ROUTE_LIST, DYNFTRACE_ROUTE_TRAMP,
				   DYNFTRACE_ROUTE_CALL_OPS,
				   DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS};
	unsigned seed = getenv("ROUTES_SEED") ? (unsigned)atoi(getenv("ROUTES_SEED")) : 1;
	double budget = getenv("ROUTES_SECONDS") ? atof(getenv("ROUTES_SECONDS")) : 30;
	const int min_steps = getenv("ROUTES_MIN_STEPS") ? atoi(getenv("ROUTES_MIN_STEPS")) : 3000;
	const int max_steps = 100000;
	int api_err = 0;

	tap_plan(11);
	dynftrace_for_each_site_info(site_ip_cb, NULL);
	struct rt_snap sn;
	rt_snapshot(&sn);
	int layout = 1;
	for (int i = 0; i < NFUNC; i++)
		if (sn.s[i].found != 1 || !!sn.s[i].literal != RT_IS_CO(i))
			layout = 0;
	if (!ok(layout, "every function has one site; co_* have a CALL_OPS literal, tr_* none")) {
		for (int i = 0; i < NFUNC; i++)
			diag("%s: %d sites, literal %#lx", rt_name[i], sn.s[i].found,
			     sn.s[i].literal);
		return 1;
	}

	srand(seed);
	for (int o = 0; o < NOPS; o++) {
		ops[o].func = cb;
		ops[o].private = (void *)(long)o;
		if (o == OPS_GPR) {
			/* the light per-ops route, its callback -mgeneral-regs-only */
			ops[o].func = load_gpr_cb;
			ops[o].flags = DYNFTRACE_OPS_FL_GPR_ONLY;
		}
		glob_of[o] = o == OPS_K ? "*_keep" : pool[rand() % NPOOL];
		if (dynftrace_set_filter(&ops[o], glob_of[o], 1))
			api_err++;
	}
	mask = masks[3];
	if (dynftrace_set_routes(mask) || dynftrace_register_ops(&ops[OPS_K]))
		api_err++;
	reg[OPS_K] = 1;

	pthread_barrier_init(&bar, NULL, NWORK + 1);
	pthread_t th[NWORK];
	for (long w = 0; w < NWORK; w++)
		pthread_create(&th[w], NULL, worker, (void *)w);

	rt_snapshot(&prev);
	double t0 = now();
	int step, nreg = 0, nfilt = 0, nmask = 0;
	for (step = 1; step <= max_steps; step++) {
		int r = rand() % 10, o = rand() % 3, err = 0;
		if (r < 4) {
			err = reg[o] ? dynftrace_unregister_ops(&ops[o])
				     : dynftrace_register_ops(&ops[o]);
			reg[o] = !reg[o];
			nreg++;
		} else if (r < 7) {
			glob_of[o] = pool[rand() % NPOOL];
			err = dynftrace_set_filter(&ops[o], glob_of[o], 1);
			nfilt++;
		} else {
			mask = masks[rand() % 4];
			err = dynftrace_set_routes(mask);
			nmask++;
		}
		if (err) {
			if (api_err++ < 5)
				diag("step %d: API call failed: %d", step, err);
		}
		rt_snapshot(&cur);
		check_model(step);
		record_transitions();
		if (step % 8 == 0)
			quiet_window(step);
		/* A slow machine (a loaded one, emulation: under qemu-user a
		 * step takes about 20 ms) goes on past the budget while pairs
		 * are missing, up to four times it: more time, not a failure. */
		double t = now() - t0;
		if (!missing_pairs(0) ? step >= min_steps || t > budget : t > 4 * budget)
			break;
	}
	double secs = now() - t0;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int w = 0; w < NWORK; w++)
		pthread_join(th[w], NULL);

	for (int o = 0; o < NOPS; o++) {
		if (reg[o] && dynftrace_unregister_ops(&ops[o]))
			api_err++;
		reg[o] = 0;
		dynftrace_free_filter(&ops[o]);
	}
	rt_snapshot(&cur);
	int all_nop = 1;
	for (int i = 0; i < NFUNC; i++)
		if (cur.s[i].enabled || cur.s[i].st != ST_NOP || cur.s[i].lit_val ||
		    !rt_code_ok(&cur.s[i]))
			all_nop = 0;

	diag("seed %u: %d steps in %.1f s (%d register/unregister, %d filter, %d route mask), "
	     "%d quiet windows",
	     seed, step, secs, nreg, nfilt, nmask, windows);
	diag("transitions seen (all sites): from \\ to  nop list ops tramp call_ops");
	for (int a = 0; a < ST_OTHER; a++) {
		unsigned long row[ST_OTHER] = {0};
		for (int i = 0; i < NFUNC; i++)
			for (int b = 0; b < ST_OTHER; b++)
				row[b] += trans[i][a][b];
		diag("  %-8s %6lu %6lu %6lu %6lu %6lu", st_name[a], row[0], row[1], row[2], row[3],
		     row[4]);
	}
	unsigned long other = 0;
	for (int i = 0; i < NFUNC; i++)
		for (int a = 0; a < NST; a++)
			other += trans[i][a][ST_OTHER] + trans[i][ST_OTHER][a];

	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	diag("%lu batches, %lu syncs, %lu traps, %lu late stub entries, %lu recursion misses",
	     st.batches, st.syncs, st.traps, st.late_entries, st.recursion_miss);

	ok(api_err == 0, "every API call succeeded (%d failed)", api_err);
	ok(mismatches == 0 && other == 0,
	   "after every step each site matched the model: route, refcount, ops, literal, code, "
	   "target (%d mismatches, %lu unknown routes)",
	   mismatches, other);
	int miss = missing_pairs(1);
	ok(miss == 0,
	   "every site went through every possible ordered pair of {nop, list, "
	   "tramp/ops, call_ops} (%d pairs missing)",
	   miss);
	ok(windows > 0 && window_bad == 0,
	   "callback counts exact per ops and function in %d quiet windows (%d wrong)", windows,
	   window_bad);
	unsigned long keep_calls[2] = {0}, late_calls = 0;
	for (int w = 0; w < NWORK; w++) {
		keep_calls[0] += calls[w][4];
		keep_calls[1] += calls[w][10];
		late_calls += calls[w][5] + calls[w][11];
	}
	ok(counts[OPS_K][4] == keep_calls[0] && counts[OPS_K][10] == keep_calls[1],
	   "K, registered throughout, got every call of co_keep (%lu of %lu) and tr_keep (%lu of "
	   "%lu) while their routes changed",
	   counts[OPS_K][4], keep_calls[0], counts[OPS_K][10], keep_calls[1]);
	unsigned long late_cb = 0;
	for (int o = 0; o < NOPS; o++)
		late_cb += counts[o][5] + counts[o][11];
	ok(late_cb == 0 && unknown_ip == 0,
	   "no callback for unselected functions (%lu of %lu *_late calls) or unknown sites (%lu)",
	   late_cb, late_calls, unknown_ip);
	ok(wrong_result == 0, "traced functions returned the right values (%lu wrong)",
	   wrong_result);
	ok(!st.killed, "not killed%s%s", st.killed ? ": " : "", st.killed ? st.kill_reason : "");
	/* x86-64's breakpoint protocol syncs 3 times per batch; aarch64 and
	 * riscv64 replace one aligned word, once (tests/unit/insn.h). */
	ok(st.syncs == TINSN_SYNCS * st.batches, "%d syncs per batch (%lu syncs, %lu batches)",
	   TINSN_SYNCS, st.syncs, st.batches);
	ok(all_nop, "after the last unregister every site is a NOP with a cleared literal");
	return tap_done();
}
