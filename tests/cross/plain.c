/* SPDX-License-Identifier: MIT */
/*
 * plain.c - a program built without sites (no dynftrace flags), for
 * tests/cross/reloc.sh: its functions are traced with -P (entry
 * relocation). What each one's first instruction is, at -O2:
 *
 * aarch64:
 *   bump   adrp (a global)          leaf, outer  stp (frames; their
 *   pick   cmp                                   callers keep values in
 *   spin   subs, the loop's head                 x2/x3 across the calls:
 *   cbzfn  cbz                                   gcc's -fipa-ra)
 *   litfn  ldr (literal)
 *
 * riscv64 (gcc aligns functions to 2 with RVC: the C ones ask for 4,
 * which the relocator needs, and odd shows the refusal):
 *   bump   auipc (a global)         spin   c.addi, c.bnez to it (a loop head)
 *   cbzfn  c.beqz, c.addi           litfn  auipc, ld of a literal
 *   brfn   beq (4 bytes)            jfn    c.j
 *   cross  c.li, then a mul that crosses the replaced word
 *   mcfn   jal t0 (a millicode call, as -msave-restore's)
 *   keep   c.addi, c.jr: called by regcheck, which sets every register
 *          but sp, gp, tp, s0 and ra first and counts those that come back
 *          changed (the callers of code built without sites may keep
 *          values anywhere: -fipa-ra)
 *   odd    on a 2-byte boundary: refused
 */
#include <stdint.h>
#include <stdio.h>

#ifdef __aarch64__
#define ALIGNED
long spin(long n);
long cbzfn(long x);
long litfn(long x);
__asm__(".text\n"
	".globl spin\n.type spin, %function\n.p2align 2\n"
	"spin:\n\tsubs x0, x0, #1\n\tb.ne spin\n\tret\n.size spin, .-spin\n"
	".globl cbzfn\n.type cbzfn, %function\n.p2align 2\n"
	"cbzfn:\n\tcbz x0, 1f\n\tadd x0, x0, #2\n\tret\n1:\tmov x0, #9\n\tret\n"
	".size cbzfn, .-cbzfn\n"
	".globl litfn\n.type litfn, %function\n.p2align 3\n"
	"litfn:\n\tldr x1, 2f\n\tadd x0, x0, x1\n\tret\n\t.p2align 3\n2:\t.quad 1000\n"
	".size litfn, .-litfn\n");
#elif defined(__riscv)
#define ALIGNED __attribute__((aligned(4)))
long spin(long n);
long cbzfn(long x);
long litfn(long x);
long brfn(long x);
long jfn(long x);
long cross(long x);
long mcfn(long x);
long keep(long x);
long odd(long x);
long regcheck(long (*fn)(long));
/* clang-format off */
#define FN(name) ".globl " #name "\n.type " #name ", %function\n.p2align 2\n" #name ":\n"
#define END(name) ".size " #name ", .-" #name "\n"
__asm__(".text\n.option push\n.option norelax\n.option rvc\n"
	FN(spin) "\tc.addi a0, -1\n\tc.bnez a0, spin\n\tret\n" END(spin)
	FN(cbzfn) "\tc.beqz a0, 1f\n\tc.addi a0, 2\n\tret\n1:\tc.li a0, 9\n\tret\n" END(cbzfn)
	FN(litfn) "1:\tauipc a1, %pcrel_hi(2f)\n\tld a1, %pcrel_lo(1b)(a1)\n\tadd a0, a0, a1\n"
	"\tret\n\t.p2align 3\n2:\t.quad 1000\n" END(litfn)
	FN(jfn) "\tc.j 1f\n\tc.nop\n1:\taddi a0, a0, 5\n\tret\n" END(jfn)
	FN(cross) "\tc.li a1, 3\n\tmul a0, a0, a1\n\tret\n" END(cross)
	FN(keep) "\tc.addi a0, 1\n\tret\n" END(keep)
	".p2align 2\n\tc.nop\n.globl odd\n.type odd, %function\nodd:\n\tc.addi a0, 3\n\tret\n" END(odd)
	"\tc.nop\n" /* back on a 4-byte boundary: norvc's alignment cannot pad 2 bytes */
	".option norvc\n"
	FN(brfn) "\tbeq a0, zero, 1f\n\taddi a0, a0, 2\n\tret\n1:\tli a0, 9\n\tret\n" END(brfn)
	FN(mcfn) "\tjal t0, mchelp\n\taddi a0, a0, 1\n\tret\n" END(mcfn)
	".p2align 2\nmchelp:\n\taddi a0, a0, 100\n\tjr t0\n"
	/* regcheck(fn): fn(fn) with every other register set; the count of
	 * registers changed, 100 if fn's result is not fn + 1 */
	FN(regcheck)
	"\taddi sp, sp, -208\n\tsd ra, 0(sp)\n\tsd a0, 8(sp)\n"
	"\tsd s1, 16(sp)\n\tsd s2, 24(sp)\n\tsd s3, 32(sp)\n\tsd s4, 40(sp)\n"
	"\tsd s5, 48(sp)\n\tsd s6, 56(sp)\n\tsd s7, 64(sp)\n\tsd s8, 72(sp)\n"
	"\tsd s9, 80(sp)\n\tsd s10, 88(sp)\n\tsd s11, 96(sp)\n"
	"\tfsd fs0, 104(sp)\n\tfsd fs1, 112(sp)\n\tfsd fs2, 120(sp)\n\tfsd fs3, 128(sp)\n"
	"\tfsd fs4, 136(sp)\n\tfsd fs5, 144(sp)\n\tfsd fs6, 152(sp)\n\tfsd fs7, 160(sp)\n"
	"\tfsd fs8, 168(sp)\n\tfsd fs9, 176(sp)\n\tfsd fs10, 184(sp)\n\tfsd fs11, 192(sp)\n"
	"\t.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
	"28,29,30,31\n"
	"\tli t0, 2000 + \\n\n\tfmv.d.x f\\n, t0\n\t.endr\n"
	"\tli t0, 0x65\n\tfscsr t0\n" /* rounding mode RUP, flags NX, OF */
	"\t.irp n, 5,6,7,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"\tli x\\n, 1000 + \\n\n\t.endr\n"
	"\tjalr a0\n"
	"\tld ra, 8(sp)\n\taddi ra, ra, 1\n\tbeq a0, ra, 1f\n\tli a0, 100\n\tj 9f\n"
	"1:\tli a0, 0\n" /* a0: the count; ra, then t0 once checked, the scratch */
	"\t.irp n, 5,6,7,9,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
	"\tli ra, 1000 + \\n\n\tbeq x\\n, ra, 2f\n\taddi a0, a0, 1\n2:\n\t.endr\n"
	"\t.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
	"28,29,30,31\n"
	"\tfmv.x.d ra, f\\n\n\tli t0, 2000 + \\n\n\tbeq ra, t0, 2f\n\taddi a0, a0, 1\n2:\n"
	"\t.endr\n"
	"\tfrcsr ra\n\tli t0, 0x65\n\tbeq ra, t0, 2f\n\taddi a0, a0, 1\n2:\n"
	"9:\tfscsr zero\n\tld ra, 0(sp)\n"
	"\tld s1, 16(sp)\n\tld s2, 24(sp)\n\tld s3, 32(sp)\n\tld s4, 40(sp)\n"
	"\tld s5, 48(sp)\n\tld s6, 56(sp)\n\tld s7, 64(sp)\n\tld s8, 72(sp)\n"
	"\tld s9, 80(sp)\n\tld s10, 88(sp)\n\tld s11, 96(sp)\n"
	"\tfld fs0, 104(sp)\n\tfld fs1, 112(sp)\n\tfld fs2, 120(sp)\n\tfld fs3, 128(sp)\n"
	"\tfld fs4, 136(sp)\n\tfld fs5, 144(sp)\n\tfld fs6, 152(sp)\n\tfld fs7, 160(sp)\n"
	"\tfld fs8, 168(sp)\n\tfld fs9, 176(sp)\n\tfld fs10, 184(sp)\n\tfld fs11, 192(sp)\n"
	"\taddi sp, sp, 208\n\tret\n"
	END(regcheck)
	".option pop\n");
/* clang-format on */
#endif
int counter;

ALIGNED __attribute__((noinline)) int bump(int x)
{
	counter += x;
	return counter;
}

ALIGNED __attribute__((noinline)) int pick(int x)
{
	if (!x)
		return 7;
	return x * 3;
}

ALIGNED __attribute__((noinline)) int leaf(int a, int b)
{
	return a * b + pick(a);
}

ALIGNED __attribute__((noinline)) int outer(int i)
{
	return leaf(i, i + 1) + bump(i);
}

#if defined(PLAIN_API) && defined(__riscv)
/* Built with -DPLAIN_API and linked with the runtime (DYNFTRACE_PATCH=
 * keep), `plain api ROUNDS` registers callbacks on keep itself: a
 * DYNFTRACE_OPS_FL_GPR_ONLY one (the light body of relocated entries:
 * route call_ops), a full one (the preserving trampoline: ops), then both
 * (the list); every call counted exactly, the ip keep's, every register
 * kept. */
#include <stdlib.h>
#include <string.h>
#include <dynftrace/dynftrace.h>

static unsigned long calls[2], wrong_ip;

static void count_cb(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
		     struct dynftrace_regs *regs)
{
	(void)parent, (void)regs;
	__atomic_fetch_add(&calls[op->private != NULL], 1, __ATOMIC_RELAXED);
	if (ip != (unsigned long)(uintptr_t)keep)
		__atomic_fetch_add(&wrong_ip, 1, __ATOMIC_RELAXED);
}

static const char *route;
static int route_cb(const struct dynftrace_site_info *si, void *data)
{
	(void)data;
	if (si->func && !strcmp(si->func, "keep"))
		route = si->route;
	return 0;
}

static int api_step(const char *what, struct dynftrace_ops **ops, int nops, const char *want,
		    int rounds)
{
	int bad = 0;
	long changed = 0;
	calls[0] = calls[1] = wrong_ip = 0;
	for (int i = 0; i < nops; i++)
		if (dynftrace_set_filter(ops[i], "keep", 1) || dynftrace_register_ops(ops[i]))
			return printf("BAD %s: cannot register\n", what), 1;
	route = NULL;
	dynftrace_for_each_site_info(route_cb, NULL);
	if (!route || strcmp(route, want))
		bad++, printf("BAD %s: route %s, not %s\n", what, route ? route : "none", want);
	for (int r = 0; r < rounds; r++)
		changed += regcheck(keep);
	if (changed)
		bad++, printf("BAD %s: %ld registers changed\n", what, changed);
	for (int i = 0; i < nops; i++) {
		unsigned long c = calls[ops[i]->private != NULL];
		if (c != (unsigned long)rounds)
			bad++, printf("BAD %s: %lu calls counted, not %d\n", what, c, rounds);
		dynftrace_unregister_ops(ops[i]);
	}
	if (wrong_ip)
		bad++, printf("BAD %s: %lu calls saw another ip\n", what, wrong_ip);
	return bad;
}

static int api(int rounds)
{
	static struct dynftrace_ops light = {.func = count_cb, .flags = DYNFTRACE_OPS_FL_GPR_ONLY};
	static struct dynftrace_ops full = {.func = count_cb, .private = &full};
	struct dynftrace_ops *both[] = {&light, &full};
	int bad = api_step("light", both, 1, "call_ops", rounds);
	bad += api_step("full", both + 1, 1, "ops", rounds);
	bad += api_step("both", both, 2, "list", rounds);
	if (!bad)
		printf("api ok %d\n", rounds);
	return bad != 0;
}
#endif

ALIGNED int main(int argc, char **argv)
{
#if defined(PLAIN_API) && defined(__riscv)
	if (argc > 2 && !strcmp(argv[1], "api"))
		return api(atoi(argv[2]));
#endif
	(void)argc, (void)argv;
	long s = 0;
	for (int i = 0; i < 4; i++)
		s += outer(i);
	s += spin(5) + cbzfn(0) + cbzfn(5) + litfn(1);
#ifdef __riscv
	s += brfn(0) + brfn(3) + jfn(1) + cross(4) + mcfn(1) + odd(1);
	printf("%ld %d regs changed: %ld\n", s, counter, regcheck(keep));
#else
	printf("%ld %d\n", s, counter);
#endif
	return 0;
}
