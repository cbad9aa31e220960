/* SPDX-License-Identifier: MIT */
/*
 * info.c - dynftrace_for_each_site_info() shows the route of every site
 * (run by tests/sh/routes-info.sh for several compilers and
 * -fcf-protection).
 *
 * Ops A selects *_f0, B *_f1, C *_f[12] (funcs.c: co_* have a CALL_OPS
 * literal, tr_* not). With A, B, C registered, for each of the four route
 * masks, every site must report:
 *   - route: nop, list (f1: two ops; or one ops off the per-ops routes:
 *     the list function runs, several ops being registered), tramp (one
 *     ops, no literal or CALL_OPS off), call_ops (co_* with CALL_OPS on,
 *     one ops or several); "ops" only once A alone is left;
 *   - refcount, enabled, and the owning ops when there is one;
 *   - literal: the 8 bytes before the function (co_* only), holding the
 *     owner (CALL_OPS route, one ops), the list ops (any other wanted
 *     site: several ops, or another route) or 0 (a NOP);
 *   - target: the call at the site; one target per route (common, callops),
 *     one per ops for its stubs.
 * Calling each function once then reaches exactly the ops that select it.
 * Then B leaves (f1 goes to C alone), C leaves. With argument "env MASK"
 * the mask is not set by the program: DYNFTRACE_ROUTES (list, tramp,
 * callops, all) chose it at start-up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

enum { NOPS = 3 };
static struct dynftrace_ops ops[NOPS];
static const char *const glob_of[NOPS] = {"*_f0", "*_f1", "*_f[12]"};
static unsigned long counts[NOPS][NFUNC];

static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
	       struct dynftrace_regs *regs)
{
	(void)pip, (void)regs;
	for (int i = 0; i < NFUNC; i++) {
		unsigned long f = (unsigned long)rt_fn[i];
		if (ip == f || ip == f + 4) /* + endbr64 */
			__atomic_fetch_add(&counts[(long)op->private][i], 1, __ATOMIC_RELAXED);
	}
}

static int old_api_ok;
static struct rt_snap snap;
static int old_cb(unsigned long ip, const char *func, const char *object, int enabled, int refcount,
		  void *data)
{
	(void)object, (void)data;
	for (int i = 0; func && i < NFUNC; i++)
		if (!strcmp(func, rt_name[i]) &&
		    (snap.s[i].ip != ip || snap.s[i].enabled != enabled ||
		     snap.s[i].refcount != refcount))
			old_api_ok = 0;
	return 0;
}

/* Check every site against the model; returns the number of wrong fields. */
static int check(const char *when, const int *reg, unsigned mask)
{
	static struct dynftrace_ops *const opp[NOPS] = {&ops[0], &ops[1], &ops[2]};
	int bad = 0;
	unsigned long common = 0, callops = 0, stub[NOPS] = {0};
	rt_snapshot(&snap);
	for (int i = 0; i < NFUNC; i++) {
		const struct rt_site *s = &snap.s[i];
		struct dynftrace_ops *owner;
		int ref, want = rt_model(i, opp, reg, glob_of, NOPS, mask, &owner, &ref);
		unsigned long fn = (unsigned long)rt_fn[i];
		char why[160] = "";
		if (s->found != 1)
			snprintf(why, sizeof(why), "%d sites", s->found);
		else if (s->ip != fn && s->ip != fn + 4)
			snprintf(why, sizeof(why), "ip %#lx, function at %#lx", s->ip, fn);
		else if (s->st != want)
			snprintf(why, sizeof(why), "route %s, want %s", st_name[s->st],
				 st_name[want]);
		else if (s->refcount != ref || s->enabled != (ref > 0))
			snprintf(why, sizeof(why), "refcount %d enabled %d, want %d", s->refcount,
				 s->enabled, ref);
		else if (s->ops != owner)
			snprintf(why, sizeof(why), "ops %p, want %p", (void *)s->ops,
				 (void *)owner);
		else if (s->literal != (RT_IS_CO(i) ? fn - 8 : 0))
			snprintf(why, sizeof(why), "literal at %#lx, want %#lx", s->literal,
				 RT_IS_CO(i) ? fn - 8 : 0);
		else if (rt_lit_wrong(s, want, ref, owner, opp, NOPS))
			snprintf(why, sizeof(why), "%s (%#lx, owner %p)",
				 rt_lit_wrong(s, want, ref, owner, opp, NOPS), s->lit_val,
				 (void *)owner);
		else if (!rt_code_ok(s))
			snprintf(why, sizeof(why), "code at the site is not %s %#lx",
				 s->enabled ? "a call of" : "a NOP", s->target);
		else if (s->enabled) {
			unsigned long *t = s->st == ST_CALLOPS ? &callops
					   : s->st == ST_TRAMP ? &stub[(long)owner->private]
							       : &common;
			if (!*t)
				*t = s->target;
			else if (*t != s->target)
				snprintf(why, sizeof(why),
					 "target %#lx, another site of the route %#lx", s->target,
					 *t);
		}
		if (why[0]) {
			bad++;
			diag("%s: %s: %s", when, rt_name[i], why);
		}
	}
	for (int o = 0; o < NOPS; o++)
		for (int p = 0; p < NOPS; p++)
			if (stub[o] && ((o != p && stub[o] == stub[p]) || stub[o] == common ||
					stub[o] == callops)) {
				bad++;
				diag("%s: ops %d's stub %#lx is another route's target", when, o,
				     stub[o]);
			}
	old_api_ok = 1;
	dynftrace_for_each_site(old_cb, NULL);
	if (!old_api_ok) {
		bad++;
		diag("%s: dynftrace_for_each_site disagrees", when);
	}
	/* Every function once: exactly the ops that select it. */
	memset(counts, 0, sizeof(counts));
	for (int i = 0; i < NFUNC; i++) {
		unsigned long (*volatile f)(unsigned long) = rt_fn[i];
		if (f(3) != routes_expect(RT_FN_KIND(i), 3))
			bad++;
	}
	for (int o = 0; o < NOPS; o++)
		for (int i = 0; i < NFUNC; i++) {
			unsigned long want = reg[o] && !fnmatch(glob_of[o], rt_name[i], 0);
			if (counts[o][i] != want) {
				bad++;
				diag("%s: %s: ops %d called %lu times, want %lu", when, rt_name[i],
				     o, counts[o][i], want);
			}
		}
	return bad;
}

static unsigned mask_from_env(void)
{
	const char *v = getenv("DYNFTRACE_ROUTES");
	if (!v || !strcmp(v, "all"))
		return DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS;
	if (!strcmp(v, "tramp"))
		return DYNFTRACE_ROUTE_TRAMP;
	if (!strcmp(v, "callops"))
		return DYNFTRACE_ROUTE_CALL_OPS;
	return DYNFTRACE_ROUTE_LIST;
}

int main(int argc, char **argv)
{
	static const char *const mname[4] = {"list", "tramp", "callops", "all"};
	int from_env = argc > 1 && !strcmp(argv[1], "env");
	int errors = 0;

	if (from_env) {
		/* The initial mask from DYNFTRACE_ROUTES, untouched by the program. */
		unsigned m = mask_from_env();
		int reg[NOPS] = {1, 1, 1};
		tap_plan(1);
		for (int o = 0; o < NOPS; o++) {
			ops[o].func = cb;
			ops[o].private = (void *)(long)o;
			errors += dynftrace_set_filter(&ops[o], glob_of[o], 1) != 0;
			errors += dynftrace_register_ops(&ops[o]) != 0;
		}
		char when[64];
		snprintf(when, sizeof(when), "DYNFTRACE_ROUTES=%s", getenv("DYNFTRACE_ROUTES"));
		int bad = check(when, reg, m);
		ok(!errors && !bad, "%s: every site's route, literal and target follow mask %s",
		   when, mname[m]);
		return tap_done();
	}

	tap_plan(8);
	ok(dynftrace_set_routes(4) == -EINVAL && dynftrace_set_routes(~0u) == -EINVAL,
	   "dynftrace_set_routes rejects unknown bits with -EINVAL");
	int reg[NOPS] = {0};
	int bad = check("nothing registered", reg, 3);
	ok(!bad, "nothing registered: every site a NOP, literals 0 (%d wrong)", bad);

	for (int o = 0; o < NOPS; o++) {
		ops[o].func = cb;
		ops[o].private = (void *)(long)o;
		errors += dynftrace_set_filter(&ops[o], glob_of[o], 1) != 0;
		errors += dynftrace_register_ops(&ops[o]) != 0;
		reg[o] = 1;
	}
	for (unsigned m = 0; m < 4; m++) {
		char when[64];
		snprintf(when, sizeof(when), "A, B, C, routes %s", mname[m]);
		errors += dynftrace_set_routes(m) != 0;
		bad = check(when, reg, m);
		ok(!bad && !errors,
		   "%s: route, refcount, ops, literal, target and callbacks of every site (%d "
		   "wrong)",
		   when, bad);
	}
	/* B leaves: f1 belongs to C alone; with CALL_OPS its literal now
	 * holds C. Then C leaves: f1, f2 back to NOPs, literals cleared. */
	int bad2 = 0;
	for (unsigned m = 0; m < 4; m++) {
		char when[64];
		errors += dynftrace_set_routes(m) != 0;
		errors += dynftrace_unregister_ops(&ops[1]) != 0;
		reg[1] = 0;
		snprintf(when, sizeof(when), "A, C, routes %s", mname[m]);
		bad2 += check(when, reg, m);
		errors += dynftrace_unregister_ops(&ops[2]) != 0;
		reg[2] = 0;
		snprintf(when, sizeof(when), "A, routes %s", mname[m]);
		bad2 += check(when, reg, m);
		errors += dynftrace_register_ops(&ops[1]) != 0;
		errors += dynftrace_register_ops(&ops[2]) != 0;
		reg[1] = reg[2] = 1;
	}
	ok(!bad2 && !errors,
	   "as ops leave, shared sites go to the one left, then to NOPs (%d wrong)", bad2);
	for (int o = 0; o < NOPS; o++) {
		errors += dynftrace_unregister_ops(&ops[o]) != 0;
		reg[o] = 0;
		dynftrace_free_filter(&ops[o]);
	}
	bad = check("all unregistered", reg, 3);
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	ok(!bad && !errors && !st.killed,
	   "all unregistered: NOPs, literals 0; no API error, not killed (%d wrong, %d errors)",
	   bad, errors);
	return tap_done();
}
