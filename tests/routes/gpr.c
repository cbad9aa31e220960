/* SPDX-License-Identifier: MIT */
/*
 * gpr.c - DYNFTRACE_OPS_FL_GPR_ONLY (run by tests/sh/routes-gpr.sh).
 *
 * Ops G has the flag and gpr_cb (gpr_cb.c, built with -mgeneral-regs-only,
 * no sanitizers) as its callback, on the functions of gpr_funcs.c, which
 * take doubles, floats, varargs, structures of doubles and more
 * floating-point arguments than registers. Its per-ops trampoline saves
 * the general registers only. Checked:
 *   - flags: an unknown bit is refused by register_ops, and GPR_ONLY by
 *     register_direct (-EINVAL);
 *   - G's sites are on the per-ops route, and its stubs jump to another
 *     body than a normal ops' stubs (the light body);
 *   - every function returns exactly what it returned untraced (bit for
 *     bit), on the main thread and on a new thread (whose first call takes
 *     the full path: it registers), and the callback ran once per call with
 *     the right argument 0;
 *   - the callback calling a traced function (gpr_nested, selected by G):
 *     the recursion guard keeps it out (through the full path), results
 *     unchanged;
 *   - G sharing a site with a normal ops (the list), and G under each route
 *     mask: unchanged results;
 *   - the route is really light: a callback that breaks the promise
 *     (clobbers xmm0-7) changes the results of G's functions when its ops
 *     has the flag, and not without it.
 * Built with -DGPR_CALL_OPS (and gpr_funcs.c with `dynftrace cflags
 * --call-ops`), the same on the CALL_OPS route: G's sites call the light
 * CALL_OPS body, another target than a normal ops' sites.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <dynftrace/dynftrace.h>

#include "gpr_funcs.h"
#include "../unit/tap.h"

enum { NRES = 7 };

/* Every function once with arguments from X; results as bytes. */
struct results {
	double dd, mix, va, pt, other;
	float ff;
	long in;
};

static void run_all(double x, struct results *r)
{
	double (*volatile dd)(double, double) = g_dd;
	float (*volatile ff)(float, float, float) = g_ff;
	double (*volatile mix)(long, double, int, float, double, double, double, double, double,
			       double, double, double) = g_mix;
	double (*volatile va)(int, ...) = g_va;
	double (*volatile pt)(struct gpr_pt, struct gpr_pt) = g_pt;
	long (*volatile in)(long, long, long, long, long, long) = g_int;
	double (*volatile other)(double) = g_other;
	memset(r, 0, sizeof(*r));
	r->dd = dd(x, x + 0.5);
	r->ff = ff((float)x, (float)x * 2.5f, 0.75f);
	r->mix = mix(3, x, 5, (float)x / 3, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8);
	r->va = va(9, x, x * 2, x * 3, x * 4, x * 5, x * 6, x * 7, x * 8, x * 9);
	r->pt = pt((struct gpr_pt){x, x + 1}, (struct gpr_pt){x * 2, x - 1});
	r->in = in((long)x, 2, 3, 4, 5, 6);
	r->other = other(x);
}

#define NX 64
static struct results want[NX];

/* Number of results (of NX x NRES) that differ from untraced, bitwise. */
static int compare_all(void)
{
	int bad = 0;
	for (int i = 0; i < NX; i++) {
		struct results r;
		double x = 1.0 + i * 0.37;
		gpr_expect_arg0 = (unsigned long)(long)x;
		run_all(x, &r);
		bad += memcmp(&r.dd, &want[i].dd, sizeof(r.dd)) != 0;
		bad += memcmp(&r.ff, &want[i].ff, sizeof(r.ff)) != 0;
		bad += memcmp(&r.mix, &want[i].mix, sizeof(r.mix)) != 0;
		bad += memcmp(&r.va, &want[i].va, sizeof(r.va)) != 0;
		bad += memcmp(&r.pt, &want[i].pt, sizeof(r.pt)) != 0;
		bad += r.in != want[i].in;
		bad += memcmp(&r.other, &want[i].other, sizeof(r.other)) != 0;
	}
	return bad;
}

static void *thread_compare(void *arg)
{
	*(int *)arg = compare_all();
	return NULL;
}

/* ---- sites ---------------------------------------------------------------- */

struct q {
	const char *name;
	const char *route;
	unsigned long ip, target;
};

static int q_cb(const struct dynftrace_site_info *si, void *data)
{
	struct q *q = data;
	if (si->func && !strcmp(si->func, q->name)) {
		q->route = si->route;
		q->ip = si->ip;
		q->target = si->target;
	}
	return 0;
}

static struct q site(const char *name)
{
	struct q q = {.name = name, .route = "?"};
	dynftrace_for_each_site_info(q_cb, &q);
	return q;
}

/* The body a stub (`push imm32; jmp rel32`) jumps to; 0 if not a stub. */
static unsigned long stub_body(unsigned long stub)
{
	const uint8_t *p = (const uint8_t *)stub;
	int32_t rel;
	if (!stub || p[0] != 0x68 || p[5] != 0xe9)
		return 0;
	memcpy(&rel, p + 6, 4);
	return stub + 10 + (unsigned long)(long)rel;
}

/* ---- callbacks -------------------------------------------------------------- */

static unsigned long plain_calls;
static void plain_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		     struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
	__atomic_fetch_add(&plain_calls, 1, __ATOMIC_RELAXED);
}

/* Breaks the promise of GPR_ONLY: clobbers the argument vector registers. */
static void liar_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		    struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
	__asm__ volatile("pcmpeqd %%xmm0, %%xmm0\n\t"
			 "pcmpeqd %%xmm1, %%xmm1\n\t"
			 "pcmpeqd %%xmm2, %%xmm2\n\t"
			 "pcmpeqd %%xmm3, %%xmm3\n\t"
			 "pcmpeqd %%xmm4, %%xmm4\n\t"
			 "pcmpeqd %%xmm5, %%xmm5\n\t"
			 "pcmpeqd %%xmm6, %%xmm6\n\t"
			 "pcmpeqd %%xmm7, %%xmm7" ::
			     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7");
}

#ifdef GPR_CALL_OPS
#define MAIN_ROUTES  DYNFTRACE_ROUTE_CALL_OPS
#define MAIN_NAME    "call_ops"
#define SHARED_NAME  "call_ops" /* the list ops in the literal */
#define BODY(target) (target)
#else
#define MAIN_ROUTES  DYNFTRACE_ROUTE_TRAMP
#define MAIN_NAME    "tramp"
#define SHARED_NAME  "list"
#define BODY(target) stub_body(target)
#endif

static const char *const funcs[] = {"g_dd", "g_ff", "g_mix", "g_va", "g_pt", "g_int"};
#define NFUNCS ((int)(sizeof(funcs) / sizeof(funcs[0])))

int main(void)
{
	struct dynftrace_ops g = {.func = gpr_cb, .flags = DYNFTRACE_OPS_FL_GPR_ONLY};
	struct dynftrace_ops n = {.func = plain_cb};
	struct dynftrace_stats st0, st1;
	int errors = 0;

	tap_plan(11);
	for (int i = 0; i < NX; i++)
		run_all(1.0 + i * 0.37, &want[i]);

	/* flags */
	struct dynftrace_ops bad = {.func = plain_cb, .flags = 0x2};
	struct dynftrace_ops d = {.func = plain_cb, .flags = DYNFTRACE_OPS_FL_GPR_ONLY};
	errors += dynftrace_set_filter(&d, "g_other", 1) != 0;
	ok(dynftrace_register_ops(&bad) == -EINVAL &&
	       dynftrace_register_direct(&d, (unsigned long)g_other) == -EINVAL,
	   "unknown ops flag and GPR_ONLY with a direct call refused with -EINVAL");
	dynftrace_free_filter(&d);

	/* G on every g_* but g_other, N on g_other */
	errors += dynftrace_set_routes(MAIN_ROUTES) != 0;
	errors += dynftrace_set_filter(&g, "g_[dfmvpi][dfinat]*", 1) != 0;
	errors += dynftrace_set_filter(&g, "gpr_nested", 0) != 0;
	errors += dynftrace_set_filter(&n, "g_other", 1) != 0;
	errors += dynftrace_register_ops(&g) != 0;
	errors += dynftrace_register_ops(&n) != 0;
	int routes_ok = 1;
	unsigned long gbody = 0, nbody = BODY(site("g_other").target);
	for (int i = 0; i < NFUNCS; i++) {
		struct q q = site(funcs[i]);
		unsigned long b = strcmp(q.route, MAIN_NAME) ? 0 : BODY(q.target);
		if (!b || (gbody && b != gbody)) {
			routes_ok = 0;
			diag("%s: route %s, stub body %#lx", funcs[i], q.route, b);
		}
		gbody = b;
	}
	ok(!errors && routes_ok && gbody && nbody && gbody != nbody,
	   "GPR_ONLY ops on route %s, whose body (%#lx) is not a normal ops' (%#lx)", MAIN_NAME,
	   gbody, nbody);

	/* results, main thread (registered already: the light path) */
	gpr_expect_arg0_ip = site("g_int").ip;
	dynftrace_get_stats(&st0);
	unsigned long c0 = gpr_calls;
	int wrong = compare_all();
	dynftrace_get_stats(&st1);
	unsigned long calls = gpr_calls - c0;
	ok(wrong == 0 && calls == (unsigned long)NX * NFUNCS && gpr_arg0_bad == 0 &&
	       st1.late_entries == st0.late_entries,
	   "doubles, floats, varargs, structures: results identical to untraced (%d of %d differ); "
	   "%lu callbacks, want %d; argument 0 right",
	   wrong, NX * NRES, calls, NX * NFUNCS);
	ok(plain_calls == NX, "the normal ops beside it: %lu calls, want %d", plain_calls, NX);

	/* a new thread: its first call registers it (full path) */
	c0 = gpr_calls;
	pthread_t th;
	int twrong = -1;
	pthread_create(&th, NULL, thread_compare, &twrong);
	pthread_join(th, NULL);
	calls = gpr_calls - c0;
	ok(twrong == 0 && calls == (unsigned long)NX * NFUNCS,
	   "on a new thread: results identical (%d differ), %lu callbacks", twrong, calls);

	/* the callback calls a traced function */
	dynftrace_get_stats(&st0);
	c0 = gpr_calls;
	unsigned long nest0 = gpr_nested_calls;
	gpr_nest = 1;
	wrong = compare_all();
	gpr_nest = 0;
	dynftrace_get_stats(&st1);
	calls = gpr_calls - c0;
	ok(wrong == 0 && calls == (unsigned long)NX * NFUNCS && gpr_nested_calls - nest0 == calls &&
	       st1.recursion_miss - st0.recursion_miss == calls,
	   "a traced call from the callback: skipped by the guard (%lu of %lu), results identical "
	   "(%d differ)",
	   st1.recursion_miss - st0.recursion_miss, calls, wrong);

	/* sharing g_dd with N: the list function */
	errors += dynftrace_unregister_ops(&n) != 0;
	errors += dynftrace_set_filter(&n, "g_dd", 1) != 0;
	errors += dynftrace_register_ops(&n) != 0;
	struct q q = site("g_dd");
	wrong = compare_all();
	ok(!errors && !strcmp(q.route, SHARED_NAME) && wrong == 0,
	   "g_dd shared with a normal ops (route %s): results identical (%d differ)", q.route,
	   wrong);
	errors += dynftrace_unregister_ops(&n) != 0;

	/* every route mask */
	int mwrong = 0;
	for (unsigned m = 0; m < 4; m++) {
		errors += dynftrace_set_routes(m) != 0;
		c0 = gpr_calls;
		mwrong += compare_all();
		mwrong += gpr_calls - c0 != (unsigned long)NX * NFUNCS;
	}
	ok(!errors && mwrong == 0, "under each route mask: results and callbacks right (%d wrong)",
	   mwrong);
	errors += dynftrace_unregister_ops(&g) != 0;

	/* the control: a callback that breaks the promise */
	struct dynftrace_ops liar = {.func = liar_cb, .flags = DYNFTRACE_OPS_FL_GPR_ONLY};
	errors += dynftrace_set_routes(MAIN_ROUTES) != 0;
	errors += dynftrace_set_filter(&liar, "g_dd", 1) != 0;
	errors += dynftrace_register_ops(&liar) != 0;
	int lwrong = compare_all();
	errors += dynftrace_unregister_ops(&liar) != 0;
	liar.flags = 0;
	errors += dynftrace_register_ops(&liar) != 0;
	int fwrong = compare_all();
	errors += dynftrace_unregister_ops(&liar) != 0;
	ok(!errors && lwrong > 0 && fwrong == 0,
	   "control: an xmm-clobbering callback corrupts results with the flag (%d differ), not "
	   "without it (%d differ): the flagged route does not save vector registers",
	   lwrong, fwrong);
	ok(compare_all() == 0, "untraced again: results identical");

	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	ok(!errors && !st.killed && st.sites_enabled == 0,
	   "no API error, not killed, every site a NOP (%d errors)", errors);
	dynftrace_free_filter(&g);
	dynftrace_free_filter(&n);
	dynftrace_free_filter(&liar);
	dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS);
	return tap_done();
}
