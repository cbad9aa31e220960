/* SPDX-License-Identifier: MIT */
/*
 * ops_table.c - the CALL_OPS table: the cost of a traced call against the
 * number of relevant and irrelevant tracers, for each route; run
 * by bench/ops_table.sh, which builds it.
 *
 * One source, three compilations into one binary:
 *   -DOT_WORK -DPFX=co_ with `dynftrace cflags --call-ops`: co_target and
 *       co_loop, whose sites have a CALL_OPS literal;
 *   -DOT_WORK -DPFX=pl_ with the plain flags: pl_target, pl_loop and 256
 *       dummy functions pl_dummy_000.. (never called);
 *   no -DOT_WORK, no sites: the driver.
 *
 * A relevant ops selects the benchmarked function (both co_target and
 * pl_target), an irrelevant one selects one dummy function of its own. All
 * callbacks do a trivial increment (or nothing: "empty"). Modes:
 *   list      dynftrace_set_routes(0), pl_target: the list function only
 *   tramp     DYNFTRACE_ROUTE_TRAMP, pl_target: per-ops trampolines
 *   callops   DYNFTRACE_ROUTE_CALL_OPS, co_target: the CALL_OPS literal
 *   trampgpr  DYNFTRACE_ROUTE_TRAMP, pl_target, every ops with
 *             DYNFTRACE_OPS_FL_GPR_ONLY and callbacks built for general
 *             registers only: the light per-ops body
 *   callopsgpr  DYNFTRACE_ROUTE_CALL_OPS, co_target, the same ops: the
 *             light CALL_OPS body
 *
 *   ops_table table REPS [CB]  for each row of the CALL_OPS table (relevant /
 *       irrelevant), REPS rounds; in each round the row's ops are registered
 *       once and the first three modes are timed in turn, three times (order
 *       rotated per round), each 100,000 calls after a warm-up; then (or
 *       before, every other round) they are registered again with the
 *       GPR_ONLY flag and the two GPR modes are timed three times each. Prints lines
 *       "row MODE R I median_total_ns min max" over the 3 x REPS samples
 *       (CB: inc or empty).
 *   ops_table parts REPS  where one traced call's time goes (ns per call,
 *       lines "part KEY median min max"), from interleaved loops of 100,000
 *       calls: the site as a NOP; hand-written copies of a traced function
 *       whose site calls a bare `ret`, or calls a copy of the trampoline's
 *       register save (tramp.S: 9 GPRs, 8 XMM, the frame) around a direct
 *       call of an empty C function, or of the light body's (9 GPRs, the
 *       frame); the real routes at 1/0 with an empty and an incrementing
 *       callback.
 *   ops_table cg MODE R I CB N  registers the row and calls the mode's
 *       function N times inside run_calls() (for callgrind's
 *       --toggle-collect=run_calls). MODE may also be nop, ret, save or
 *       savegpr (the hand-written copies; R I CB ignored).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
#define CAT(a, b)  a##b
#define XCAT(a, b) CAT(a, b)
#define NAME(n)	   XCAT(PFX, n)

#define NDUMMY 256

#ifdef OT_WORK
/* ---- the traced code ------------------------------------------------------ */

NOINLINE unsigned long NAME(target)(unsigned long x)
{
	return x + 1;
}

/* N calls of the target, nothing else. */
NOINLINE unsigned long NAME(loop)(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++) {
		s = NAME(target)(s);
		__asm__ volatile("" : "+r"(s));
	}
	return s;
}

#ifdef OT_DUMMIES
#define D(n)                                                                                       \
	NOINLINE unsigned long NAME(dummy_##n)(unsigned long x)                                    \
	{                                                                                          \
		return x ^ 0x##n##u;                                                               \
	}
/* clang-format cannot settle on a layout for these: */
/* clang-format off */
#define D16(h)                                                                                     \
	D(h##0) D(h##1) D(h##2) D(h##3) D(h##4) D(h##5) D(h##6) D(h##7)                            \
	D(h##8) D(h##9) D(h##a) D(h##b) D(h##c) D(h##d) D(h##e) D(h##f)
D16(0) D16(1) D16(2) D16(3) D16(4) D16(5) D16(6) D16(7)
D16(8) D16(9) D16(a) D16(b) D16(c) D16(d) D16(e) D16(f)
/* clang-format on */
#endif

#else
/* ---- the driver ------------------------------------------------------------ */

#include <dynftrace/dynftrace.h>

#include "bench_stat.h"

unsigned long co_loop(unsigned long n), pl_loop(unsigned long n);

/* The first NPLAIN modes share one registration of a row; M_GPR needs the
 * ops registered with DYNFTRACE_OPS_FL_GPR_ONLY. */
enum {
	M_LIST,
	M_TRAMP,
	M_CALLOPS,
	M_GPR,
	M_COGPR,
	NMODES,
	NPLAIN = M_GPR,
	NGPR = NMODES - M_GPR,
	NCALLS = 100000,
	MAXOPS = 200
};
static const char *const mode_name[NMODES] = {"list", "tramp", "callops", "trampgpr", "callopsgpr"};
static const unsigned mode_mask[NMODES] = {DYNFTRACE_ROUTE_LIST, DYNFTRACE_ROUTE_TRAMP,
					   DYNFTRACE_ROUTE_CALL_OPS, DYNFTRACE_ROUTE_TRAMP,
					   DYNFTRACE_ROUTE_CALL_OPS};
static unsigned long (*const mode_loop[NMODES])(unsigned long) = {pl_loop, pl_loop, co_loop,
								  pl_loop, co_loop};

static const struct {
	int rel, irr;
} rows[] = {
    {0, 0}, {0, 1},  {0, 2},   {0, 10},	 {0, 100}, {0, 200}, {1, 0},   {1, 1},
    {1, 2}, {1, 10}, {1, 100}, {1, 200}, {2, 0},   {10, 0},  {100, 0}, {200, 0},
};
#define NROWS	    ((int)(sizeof(rows) / sizeof(rows[0])))

static struct dynftrace_ops rel_ops[MAXOPS], irr_ops[MAXOPS];
static volatile unsigned long hits;

static void inc_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		   struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
	hits++;
}

static void empty_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		     struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
}

/* The same, for GPR_ONLY ops: built for general registers only. */
#define GPR_ONLY_FN __attribute__((target("general-regs-only")))
static GPR_ONLY_FN void gpr_inc_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
				   struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
	hits++;
}

static GPR_ONLY_FN void gpr_empty_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
				     struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
}

/* Give every ops the flag and the GPR-only twin of its callback, or back. */
static void set_gpr(int on)
{
	for (int i = 0; i < MAXOPS; i++) {
		struct dynftrace_ops *o[2] = {&rel_ops[i], &irr_ops[i]};
		for (int j = 0; j < 2; j++) {
			dynftrace_func_t f = o[j]->func;
			if (on)
				f = f == inc_cb ? gpr_inc_cb : f == empty_cb ? gpr_empty_cb : f;
			else
				f = f == gpr_inc_cb ? inc_cb : f == gpr_empty_cb ? empty_cb : f;
			o[j]->func = f;
			o[j]->flags = on ? DYNFTRACE_OPS_FL_GPR_ONLY : 0;
		}
	}
}

static void die(const char *what, int err)
{
	fprintf(stderr, "ops_table: %s failed: %d\n", what, err);
	exit(1);
}

static void setup_ops(dynftrace_func_t cb)
{
	char g[32];
	for (int i = 0; i < MAXOPS; i++) {
		rel_ops[i].func = cb;
		irr_ops[i].func = cb;
		int e = dynftrace_set_filter(&rel_ops[i], "[cp][ol]_target", 1);
		if (e)
			die("set_filter (relevant)", e);
		snprintf(g, sizeof(g), "pl_dummy_%02x", i);
		e = dynftrace_set_filter(&irr_ops[i], g, 1);
		if (e)
			die("set_filter (irrelevant)", e);
	}
}

static void row_register(int r, int reg)
{
	for (int i = 0; i < rows[r].rel; i++) {
		int e = reg ? dynftrace_register_ops(&rel_ops[i])
			    : dynftrace_unregister_ops(&rel_ops[i]);
		if (e)
			die("(un)register (relevant)", e);
	}
	for (int i = 0; i < rows[r].irr; i++) {
		int e = reg ? dynftrace_register_ops(&irr_ops[i])
			    : dynftrace_unregister_ops(&irr_ops[i]);
		if (e)
			die("(un)register (irrelevant)", e);
	}
}

static double time_mode(int m)
{
	int e = dynftrace_set_routes(mode_mask[m]);
	if (e)
		die("set_routes", e);
	mode_loop[m](NCALLS / 10); /* warm-up */
	double t0 = now_ns();
	mode_loop[m](NCALLS);
	return now_ns() - t0;
}

static int table(int reps, dynftrace_func_t cb)
{
	enum { INNER = 3, MAXS = 64 * INNER };
	static double v[NROWS][NMODES][MAXS];
	unsigned long h0 = hits;
	if (reps > MAXS / INNER)
		reps = MAXS / INNER;
	int ns = reps * INNER;
	setup_ops(cb);
	for (int k = 0; k < reps; k++) {
		for (int r = 0; r < NROWS; r++) {
			for (int half = 0; half < 2; half++) {
				int gpr = half ^ (k & 1); /* GPR_ONLY first every other round */
				set_gpr(gpr);
				row_register(r, 1);
				if (gpr) {
					for (int j = 0; j < NGPR * INNER; j++) {
						int m = M_GPR + (j + k) % NGPR;
						v[r][m][k * INNER + j / NGPR] = time_mode(m);
					}
				} else {
					for (int j = 0; j < NPLAIN * INNER; j++) {
						int m = (j + k) % NPLAIN;
						v[r][m][k * INNER + j / NPLAIN] = time_mode(m);
					}
				}
				row_register(r, 0);
			}
			set_gpr(0);
		}
	}
	for (int r = 0; r < NROWS; r++)
		for (int m = 0; m < NMODES; m++) {
			double *x = v[r][m];
			double med = sort_median(x, ns);
			printf("row %s %d %d %.0f %.0f %.0f\n", mode_name[m], rows[r].rel,
			       rows[r].irr, med, x[0], x[ns - 1]);
		}
	/* The callbacks ran as often as the rows say (incrementing ones only). */
	unsigned long want = 0;
	for (int r = 0; r < NROWS; r++)
		want += (unsigned long)rows[r].rel * NMODES * (NCALLS + NCALLS / 10) *
			(unsigned long)ns;
	printf("hits %lu want %lu\n", hits - h0, cb == inc_cb ? want : 0);
	return 0;
}

/* ---- where the time goes: hand-written copies of the path ---------------- */

/* clang-format off */
/* The two trampolines' parts: the frame and the 9 GPRs saved, the
 * arguments of the callback (ip, parent_ip, NULL ops, the saved registers),
 * the GPRs restored. */
#define MIM_SAVE_GPRS \
	"	pushq %rbp\n" \
	"	movq %rsp, %rbp\n" \
	"	subq $248, %rsp\n" \
	"	movq %rdi, 0(%rsp)\n" \
	"	movq %rsi, 8(%rsp)\n" \
	"	movq %rdx, 16(%rsp)\n" \
	"	movq %rcx, 24(%rsp)\n" \
	"	movq %r8, 32(%rsp)\n" \
	"	movq %r9, 40(%rsp)\n" \
	"	movq %rax, 48(%rsp)\n" \
	"	movq %r10, 56(%rsp)\n" \
	"	movq %r11, 64(%rsp)\n"
#define MIM_CB_ARGS \
	"	movq 0(%rbp), %rax\n" \
	"	movq %rax, 72(%rsp)\n" \
	"	leaq 16(%rbp), %rax\n" \
	"	movq %rax, 80(%rsp)\n" \
	"	movq 8(%rbp), %rdi\n" \
	"	subq $5, %rdi\n" \
	"	movq %rdi, 88(%rsp)\n" \
	"	movq 16(%rbp), %rsi\n" \
	"	xorl %edx, %edx\n" \
	"	movq %rsp, %rcx\n"
#define MIM_RESTORE_GPRS \
	"	movq 0(%rsp), %rdi\n" \
	"	movq 8(%rsp), %rsi\n" \
	"	movq 16(%rsp), %rdx\n" \
	"	movq 24(%rsp), %rcx\n" \
	"	movq 32(%rsp), %r8\n" \
	"	movq 40(%rsp), %r9\n" \
	"	movq 48(%rsp), %rax\n" \
	"	movq 56(%rsp), %r10\n" \
	"	movq 64(%rsp), %r11\n" \
	"	leave\n" \
	"	ret\n"
/*
 * mim_nop: a traced function whose site is the NOP5; mim_ret: its site
 * calls a bare `ret`; mim_save: its site calls mim_tramp, which saves and
 * restores what tramp.S's common trampoline saves and calls the C function
 * in mim_cb directly (no C entry, no recursion guard, no RCU, no ops).
 */
void *mim_cb, *mim_cb_gpr;
__asm__("	.text\n"
	"	.globl mim_nop, mim_ret, mim_save, mim_savegpr\n"
	"	.hidden mim_nop, mim_ret, mim_save, mim_savegpr\n"
	"	.p2align 4\n"
	"	.type mim_nop, @function\n"
	"mim_nop:\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"	leaq 1(%rdi), %rax\n"
	"	ret\n"
	"	.size mim_nop, . - mim_nop\n"
	"	.p2align 4\n"
	"	.type mim_ret, @function\n"
	"mim_ret:\n"
	"	call mim_bare_ret\n"
	"	leaq 1(%rdi), %rax\n"
	"	ret\n"
	"	.size mim_ret, . - mim_ret\n"
	"	.p2align 4\n"
	"	.type mim_save, @function\n"
	"mim_save:\n"
	"	call mim_tramp\n"
	"	leaq 1(%rdi), %rax\n"
	"	ret\n"
	"	.size mim_save, . - mim_save\n"
	"	.p2align 4\n"
	"	.type mim_savegpr, @function\n"
	"mim_savegpr:\n"
	"	call mim_tramp_gpr\n"
	"	leaq 1(%rdi), %rax\n"
	"	ret\n"
	"	.size mim_savegpr, . - mim_savegpr\n"
	"	.p2align 4\n"
	"	.type mim_bare_ret, @function\n"
	"mim_bare_ret:\n"
	"	ret\n"
	"	.size mim_bare_ret, . - mim_bare_ret\n"
	"	.p2align 4\n"
	"	.type mim_tramp, @function\n"
	"mim_tramp:\n"
	MIM_SAVE_GPRS
	"	movdqu %xmm0, 112(%rsp)\n"
	"	movdqu %xmm1, 128(%rsp)\n"
	"	movdqu %xmm2, 144(%rsp)\n"
	"	movdqu %xmm3, 160(%rsp)\n"
	"	movdqu %xmm4, 176(%rsp)\n"
	"	movdqu %xmm5, 192(%rsp)\n"
	"	movdqu %xmm6, 208(%rsp)\n"
	"	movdqu %xmm7, 224(%rsp)\n"
	MIM_CB_ARGS
	"	call *mim_cb(%rip)\n"
	"	movdqu 112(%rsp), %xmm0\n"
	"	movdqu 128(%rsp), %xmm1\n"
	"	movdqu 144(%rsp), %xmm2\n"
	"	movdqu 160(%rsp), %xmm3\n"
	"	movdqu 176(%rsp), %xmm4\n"
	"	movdqu 192(%rsp), %xmm5\n"
	"	movdqu 208(%rsp), %xmm6\n"
	"	movdqu 224(%rsp), %xmm7\n"
	MIM_RESTORE_GPRS
	"	.size mim_tramp, . - mim_tramp\n"
	/* the light body's part: 9 GPRs and the frame, no XMM */
	"	.p2align 4\n"
	"	.type mim_tramp_gpr, @function\n"
	"mim_tramp_gpr:\n"
	MIM_SAVE_GPRS
	MIM_CB_ARGS
	"	call *mim_cb_gpr(%rip)\n"
	MIM_RESTORE_GPRS
	"	.size mim_tramp_gpr, . - mim_tramp_gpr\n");
/* clang-format on */
unsigned long mim_nop(unsigned long), mim_ret(unsigned long), mim_save(unsigned long),
    mim_savegpr(unsigned long);

#define MIM_LOOP(name, fn)                                                                         \
	static NOINLINE unsigned long name(unsigned long n)                                        \
	{                                                                                          \
		unsigned long s = 0;                                                               \
		for (unsigned long i = 0; i < n; i++) {                                            \
			s = fn(s);                                                                 \
			__asm__ volatile("" : "+r"(s));                                            \
		}                                                                                  \
		return s;                                                                          \
	}
MIM_LOOP(loop_nop, mim_nop)
MIM_LOOP(loop_ret, mim_ret)
MIM_LOOP(loop_save, mim_save)
MIM_LOOP(loop_savegpr, mim_savegpr)

static double time_loop(unsigned long (*loop)(unsigned long))
{
	loop(NCALLS / 10);
	double t0 = now_ns();
	loop(NCALLS);
	return now_ns() - t0;
}

static void report(const char *key, double *x, int n)
{
	double med = sort_median(x, n);
	printf("part %s %.3f %.3f %.3f\n", key, med / NCALLS, x[0] / NCALLS, x[n - 1] / NCALLS);
}

static int parts(int reps)
{
	enum {
		P_NOP,
		P_RET,
		P_SAVE,
		P_SAVEGPR,
		P_EMPTY,
		P_INC = P_EMPTY + NMODES,
		NPARTS = P_INC + NMODES
	};
	static double v[NPARTS][256];
	static char key[NPARTS][32] = {"site_nop", "site_calls_ret", "save_restore_direct_cb",
				       "save_gpr_direct_cb"};
	for (int m = 0; m < NMODES; m++) {
		snprintf(key[P_EMPTY + m], sizeof(key[0]), "empty_%s", mode_name[m]);
		snprintf(key[P_INC + m], sizeof(key[0]), "inc_%s", mode_name[m]);
	}
	if (reps > 256)
		reps = 256;
	mim_cb = (void *)empty_cb;
	mim_cb_gpr = (void *)gpr_empty_cb;
	for (int k = 0; k < reps; k++) {
		v[P_NOP][k] = time_loop(loop_nop);
		v[P_RET][k] = time_loop(loop_ret);
		v[P_SAVE][k] = time_loop(loop_save);
		v[P_SAVEGPR][k] = time_loop(loop_savegpr);
		for (int c = 0; c < 4; c++) {
			int gpr = (c >> 1) ^ (k & 1), inc = c & 1;
			rel_ops[0].func =
			    gpr ? (inc ? gpr_inc_cb : gpr_empty_cb) : (inc ? inc_cb : empty_cb);
			rel_ops[0].flags = gpr ? DYNFTRACE_OPS_FL_GPR_ONLY : 0;
			int e = dynftrace_register_ops(&rel_ops[0]);
			if (e)
				die("register", e);
			for (int j = 0; j < (gpr ? NGPR : NPLAIN); j++) {
				int m = gpr ? M_GPR + (j + k) % NGPR : (j + k) % NPLAIN;
				v[(inc ? P_INC : P_EMPTY) + m][k] = time_mode(m);
			}
			e = dynftrace_unregister_ops(&rel_ops[0]);
			if (e)
				die("unregister", e);
		}
		rel_ops[0].flags = 0;
	}
	for (int p = 0; p < NPARTS; p++)
		report(key[p], v[p], reps);
	return 0;
}

/* The collected part for callgrind. */
NOINLINE unsigned long run_calls(unsigned long (*loop)(unsigned long), unsigned long n)
{
	return loop(n);
}

static int cg(const char *mode, int rel, int irr, const char *cbname, unsigned long n)
{
	int m, r;
	mim_cb = (void *)empty_cb;
	mim_cb_gpr = (void *)gpr_empty_cb;
	if (!strcmp(mode, "nop") || !strcmp(mode, "ret") || !strcmp(mode, "save") ||
	    !strcmp(mode, "savegpr")) {
		printf("%lu\n", run_calls(mode[0] == 'n'   ? loop_nop
					  : mode[0] == 'r' ? loop_ret
					  : mode[4]	   ? loop_savegpr
							   : loop_save,
					  n));
		return 0;
	}
	for (m = 0; m < NMODES && strcmp(mode, mode_name[m]); m++)
		;
	for (r = 0; r < NROWS && (rows[r].rel != rel || rows[r].irr != irr); r++)
		;
	if (m == NMODES || r == NROWS) {
		fprintf(stderr, "ops_table: no mode %s or row %d/%d\n", mode, rel, irr);
		return 2;
	}
	setup_ops(strcmp(cbname, "empty") ? inc_cb : empty_cb);
	set_gpr(m >= M_GPR);
	row_register(r, 1);
	int e = dynftrace_set_routes(mode_mask[m]);
	if (e)
		die("set_routes", e);
	mode_loop[m](10); /* translate the patched code once */
	printf("%lu\n", run_calls(mode_loop[m], n));
	row_register(r, 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "table"))
		return table(atoi(argv[2]),
			     argc > 3 && !strcmp(argv[3], "empty") ? empty_cb : inc_cb);
	if (argc == 3 && !strcmp(argv[1], "parts")) {
		setup_ops(empty_cb);
		return parts(atoi(argv[2]));
	}
	if (argc == 7 && !strcmp(argv[1], "cg"))
		return cg(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5],
			  strtoul(argv[6], NULL, 0));
	fprintf(stderr, "usage: ops_table table REPS [inc|empty] | parts REPS | "
			"cg MODE R I inc|empty N\n");
	return 2;
}
#endif
