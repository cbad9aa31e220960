/* SPDX-License-Identifier: MIT */
/* gpr_funcs.h - the traced functions of the GPR_ONLY test (gpr_funcs.c)
 * and of its callback file (gpr_cb.c). */
#ifndef ROUTES_GPR_FUNCS_H
#define ROUTES_GPR_FUNCS_H

#define NOINLINE __attribute__((noinline))

struct gpr_pt {
	double x, y;
};

double g_dd(double a, double b);
float g_ff(float a, float b, float c);
double g_mix(long i, double a, int j, float b, double c, double d, double e, double f, double g,
	     double h, double k, double l);
double g_va(int n, ...);
double g_pt(struct gpr_pt p, struct gpr_pt q);
long g_int(long a, long b, long c, long d, long e, long f);
double g_other(double a);

/* gpr_cb.c (built with -mgeneral-regs-only, no sanitizers) */
struct dynftrace_ops;
struct dynftrace_regs;
void gpr_cb(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
	    struct dynftrace_regs *regs);
unsigned long gpr_nested(unsigned long x); /* traced, called by gpr_cb when asked */
extern unsigned long gpr_calls, gpr_nested_calls, gpr_arg0_bad;
extern unsigned long gpr_expect_arg0_ip, gpr_expect_arg0; /* check arg 0 at this ip */
extern int gpr_nest;					  /* gpr_cb calls gpr_nested */
#endif
