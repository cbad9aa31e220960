/* SPDX-License-Identifier: MIT */
/*
 * gpr_cb.c - the callback of a DYNFTRACE_OPS_FL_GPR_ONLY ops (tests/routes/
 * gpr.c): built with -mgeneral-regs-only and without sanitizers, as the
 * flag's contract says (tests/sh/routes-gpr.sh), with the site flags too
 * so that gpr_nested, which it calls, is traced. It counts calls, checks
 * argument 0 through dynftrace_regs_arg (the runtime's accessor may be
 * called from such a callback) and, when asked, calls a traced function
 * (the recursion guard then keeps the callback out, on the full path).
 */
#include <dynftrace/dynftrace.h>

#include "gpr_funcs.h"

unsigned long gpr_calls, gpr_nested_calls, gpr_arg0_bad;
unsigned long gpr_expect_arg0_ip, gpr_expect_arg0;
int gpr_nest;

NOINLINE unsigned long gpr_nested(unsigned long x)
{
	__atomic_fetch_add(&gpr_nested_calls, 1, __ATOMIC_RELAXED);
	return x + 1;
}

void gpr_cb(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
	    struct dynftrace_regs *regs)
{
	(void)parent_ip, (void)ops;
	__atomic_fetch_add(&gpr_calls, 1, __ATOMIC_RELAXED);
	if (ip == __atomic_load_n(&gpr_expect_arg0_ip, __ATOMIC_RELAXED) &&
	    dynftrace_regs_arg(regs, 0) != __atomic_load_n(&gpr_expect_arg0, __ATOMIC_RELAXED))
		__atomic_fetch_add(&gpr_arg0_bad, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&gpr_nest, __ATOMIC_RELAXED)) {
		unsigned long (*volatile f)(unsigned long) = gpr_nested;
		f(ip);
	}
}
