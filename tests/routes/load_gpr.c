/* SPDX-License-Identifier: MIT */
/*
 * load_gpr.c - the callback of load.c's DYNFTRACE_OPS_FL_GPR_ONLY ops, the
 * same as load.c's cb, built for general registers only (-mgeneral-regs-only;
 * riscv64: the ISA without F and D) and without sanitizers
 * (tests/sh/routes-load.sh), as the flag's contract says.
 */
#include <dynftrace/dynftrace.h>

enum { NOPS = 4, NFUNC = 12 };
extern unsigned long counts[NOPS][NFUNC];
extern unsigned long unknown_ip;
extern unsigned long site_ip[NFUNC];

void load_gpr_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		 struct dynftrace_regs *regs);

void load_gpr_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
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
