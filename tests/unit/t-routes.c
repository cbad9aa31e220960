/* t-routes: what a callback sees is the same on every route.
 * For each route mask (list only, per-ops trampolines, CALL_OPS, all; this
 * program has no CALL_OPS literals, so the last two take the common
 * trampoline), with one ops and with two ops on the same function:
 *   - ip is the site that dynftrace_for_each_site_info reports, parent_ip
 *     a return address inside the caller, ops the registered ops;
 *   - dynftrace_regs_arg() gives the six integer arguments, and the traced
 *     function still gets all of them, its double arguments included;
 *   - a traced function called from the callback does not call it again
 *     (recursion_miss counts it);
 *   - dynftrace_set_routes and dynftrace_for_each_site_info called from a
 *     callback return -EDEADLK.
 * The routes of tests/routes/ (CALL_OPS builds) are covered by
 * tests/sh/routes-*.sh. */
#include <errno.h>
#include <string.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"

#define NOINLINE __attribute__((noinline))

NOINLINE double rt_args(long a, long b, long c, long d, long e, long f, double x, double y)
{
	return (double)(a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f) + x * y;
}

NOINLINE long rt_inner(long x)
{
	return x + 1;
}

NOINLINE void rt_caller_mark(void)
{
	__asm__ volatile("");
}

/* What the callback saw. */
static volatile unsigned long seen_site, seen_ip, seen_parent, seen_args[6], cb_calls, inner_calls;
static struct dynftrace_ops *volatile seen_ops;
static volatile int deadlk_routes, deadlk_info;

static int nop_site_cb(const struct dynftrace_site_info *si, void *data)
{
	(void)si, (void)data;
	return 0;
}

static void cb(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
	       struct dynftrace_regs *regs)
{
	if (ip != seen_site)
		return; /* rt_inner: only reached if the guard failed (cb_calls stays) */
	cb_calls++;
	seen_ip = ip;
	seen_parent = parent;
	seen_ops = op;
	for (int i = 0; i < 6; i++)
		seen_args[i] = dynftrace_regs_arg(regs, i);
	/* A traced function from inside: the guard keeps us out. */
	long (*volatile in)(long) = rt_inner;
	inner_calls += in(1) == 2;
	deadlk_routes = dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP) == -EDEADLK;
	deadlk_info = dynftrace_for_each_site_info(nop_site_cb, NULL) == -EDEADLK;
}

static unsigned long other_calls;
static void other_cb(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
		     struct dynftrace_regs *regs)
{
	(void)ip, (void)parent, (void)op, (void)regs;
	other_calls++;
}

struct find {
	const char *name;
	unsigned long ip;
	const char *route;
};

static int find_cb(const struct dynftrace_site_info *si, void *data)
{
	struct find *f = data;
	if (si->func && !strcmp(si->func, f->name)) {
		f->ip = si->ip;
		f->route = si->route;
	}
	return 0;
}

int main(void)
{
	static const unsigned masks[4] = {DYNFTRACE_ROUTE_LIST, DYNFTRACE_ROUTE_TRAMP,
					  DYNFTRACE_ROUTE_CALL_OPS,
					  DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS};
	/* mask 0: the list function runs even for one ops, and says so */
	static const char *const want_one[4] = {"list", "tramp", "ops", "tramp"};
	struct dynftrace_ops ops = {.func = cb}, other = {.func = other_cb};
	unsigned long caller_lo = (unsigned long)main, caller_hi = caller_lo + 16384;

	tap_plan(4 * 8 + 1);
	if (dynftrace_set_filter(&ops, "rt_args", 1) || dynftrace_set_filter(&ops, "rt_inner", 0) ||
	    dynftrace_set_filter(&other, "rt_args", 1))
		return 1;
	for (int two = 0; two < 2; two++) {
		for (int m = 0; m < 4; m++) {
			struct dynftrace_stats st0, st1;
			int err = dynftrace_set_routes(masks[m]) || dynftrace_register_ops(&ops) ||
				  (two && dynftrace_register_ops(&other));
			struct find f = {.name = "rt_args"};
			dynftrace_for_each_site_info(find_cb, &f);
			const char *want = two ? "list" : want_one[m];
			dynftrace_get_stats(&st0);
			cb_calls = inner_calls = 0;
			seen_ip = 0;
			seen_site = f.ip;
			double (*volatile fn)(long, long, long, long, long, long, double, double) =
			    rt_args;
			double r = fn(1, 2, 3, 4, 5, 6, 1.5, 4.0);
			rt_caller_mark();
			dynftrace_get_stats(&st1);
			int args_ok = 1;
			for (int i = 0; i < 6; i++)
				args_ok &= seen_args[i] == (unsigned long)i + 1;
			ok(!err && f.route && !strcmp(f.route, want) && cb_calls == 1 &&
			       seen_ops == &ops && seen_ip == f.ip,
			   "%s, mask %u: route %s (want %s), callback once (%lu) with its ops and "
			   "the site's ip",
			   two ? "two ops" : "one ops", masks[m], f.route ? f.route : "?", want,
			   cb_calls);
			ok(args_ok && r == 91.0 + 6.0,
			   "%s, mask %u: regs give the 6 arguments; "
			   "the function got them and its doubles (%g)",
			   two ? "two ops" : "one ops", masks[m], r);
			ok(seen_parent >= caller_lo && seen_parent < caller_hi,
			   "%s, mask %u: parent_ip %#lx is in main()", two ? "two ops" : "one ops",
			   masks[m], seen_parent);
			ok(inner_calls == 1 && st1.recursion_miss == st0.recursion_miss + 1 &&
			       deadlk_routes && deadlk_info,
			   "%s, mask %u: inner traced call ran untraced; API calls from the "
			   "callback give -EDEADLK",
			   two ? "two ops" : "one ops", masks[m]);
			dynftrace_unregister_ops(&ops);
			if (two)
				dynftrace_unregister_ops(&other);
		}
	}
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	ok(!st.killed && st.sites_enabled == 0 && other_calls == 4,
	   "not killed, every site a NOP again, the second ops called 4 times (%lu)", other_calls);
	dynftrace_free_filter(&ops);
	dynftrace_free_filter(&other);
	dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS);
	return tap_done();
}
