/* t-basic: register/unregister, filters, args and the single/list paths. */
#include <errno.h>
#include <string.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"

#define NOINLINE __attribute__((noinline))
static volatile int sink;
NOINLINE int leaf_a(int x)
{
	sink += x;
	return x + 1;
}
NOINLINE int leaf_b(int x)
{
	sink += x;
	return x + 2;
}
NOINLINE int other_c(int x)
{
	sink += x;
	return x + 3;
}
NOINLINE double fp_args(double a, double b, long c, long d, long e, long f, long g, long h)
{
	return a * b + (double)(c + d + e + f + g + h);
}

/* volatile: the compiler cannot see that traced calls run the callbacks */
static volatile unsigned long hits[2], last_ip[2], last_arg0[2];
static void cb0(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		struct dynftrace_regs *r)
{
	hits[0]++;
	last_ip[0] = ip;
	last_arg0[0] = dynftrace_regs_arg(r, 0);
	(void)pip;
	(void)o;
	leaf_b(0); /* recursion guard: must not call us again */
}
static void cb1(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		struct dynftrace_regs *r)
{
	hits[1]++;
	last_ip[1] = ip;
	last_arg0[1] = dynftrace_regs_arg(r, 0);
	(void)pip;
	(void)o;
}

int main(void)
{
	struct dynftrace_ops a = {.func = cb0}, b = {.func = cb1};
	struct dynftrace_stats st;
	tap_plan(27);
	dynftrace_get_stats(&st);
	ok(st.sites >= 4, "sites discovered (%lu)", st.sites);
	ok(st.sites_enabled == 0, "nothing enabled at start");

	ok(dynftrace_set_filter(&a, "leaf_*", 1) == 0, "filter leaf_*");
	ok(dynftrace_set_filter(&a, "no_such_fn", 0) == -ENOENT, "unknown glob -> -ENOENT");
	ok(dynftrace_set_filter(&a, "[abc", 0) == -EINVAL, "bad glob -> -EINVAL");
	ok(dynftrace_register_ops(&a) == 0, "register a");
	ok(dynftrace_register_ops(&a) == -EBUSY, "double register -> -EBUSY");
	leaf_a(7);
	leaf_b(8);
	other_c(9);
	ok(hits[0] == 2, "a saw leaf_a and leaf_b only (%lu)", hits[0]);
	ok(last_arg0[0] == 8, "arg0 seen (%lu)", last_arg0[0]);
	ok(last_ip[0] >= (unsigned long)leaf_b && last_ip[0] < (unsigned long)leaf_b + 16,
	   "ip is the site of leaf_b");
	ok(leaf_a(1) == 2 && other_c(1) == 4, "traced functions still compute right");

	ok(dynftrace_register_ops(&b) == 0, "register b (all functions)");
	hits[0] = hits[1] = 0;
	leaf_a(1);
	other_c(2);
	ok(hits[0] == 1 && hits[1] == 2, "list: a=1 (%lu) b=2 (%lu)", hits[0], hits[1]);
	ok(fp_args(1.5, 2.0, 1, 2, 3, 4, 5, 6) == 24.0, "fp and stack args survive the trampoline");

	ok(dynftrace_set_notrace(&b, "other_*", 1) == 0, "b notrace other_*");
	hits[1] = 0;
	other_c(1);
	leaf_a(1);
	ok(hits[1] == 1, "notrace honoured (%lu)", hits[1]);

	ok(dynftrace_unregister_ops(&a) == 0, "unregister a");
	hits[0] = hits[1] = 0;
	leaf_a(1);
	ok(hits[0] == 0 && hits[1] == 1, "single path: only b (%lu %lu)", hits[0], hits[1]);
	ok(dynftrace_unregister_ops(&b) == 0, "unregister b");
	ok(dynftrace_unregister_ops(&b) == -EINVAL, "double unregister -> -EINVAL");
	/* regexes (pattern.c): anchored alternatives; one that does not compile */
	ok(dynftrace_set_filter(&a, "^leaf_(a|b)$", 1) == 0, "regex filter ^leaf_(a|b)$");
	ok(dynftrace_set_filter(&a, "leaf_(", 0) == -EINVAL,
	   "regex that does not compile -> -EINVAL");
	ok(dynftrace_register_ops(&a) == 0, "register a with the regex");
	hits[0] = 0;
	leaf_a(1);
	leaf_b(1);
	other_c(1);
	ok(hits[0] == 2, "regex: a saw leaf_a and leaf_b only (%lu)", hits[0]);
	ok(dynftrace_unregister_ops(&a) == 0, "unregister a");
	dynftrace_get_stats(&st);
	ok(st.sites_enabled == 0 && !st.killed, "all sites NOP again, not killed (%s)",
	   st.kill_reason);
	ok(st.syncs == TINSN_SYNCS * st.batches, "%d syncs per batch (%lu syncs, %lu batches)",
	   TINSN_SYNCS, st.syncs, st.batches);
	dynftrace_free_filter(&a);
	dynftrace_free_filter(&b);
	return tap_done();
}
