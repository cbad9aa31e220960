/*
 * regs: every register must come back from a relocated entry's routes as
 * it was (tests/sh/entries.sh). Built with no dynftrace flags. probe_*
 * (assembly) set every general register but rsp, every vector register
 * the CPU has (xmm0-15, or ymm0-15, or zmm0-31 and k0-7) to known values,
 * call target_fn, whose own code changes nothing, and store what they hold
 * after it; main compares. outer_fn calls a probe from one level up (for
 * the graph tracer's depth limit: target_fn is then untraced through its
 * thunk). Prints "ok N" after N rounds, or each register that changed.
 * Usage: regs [ROUNDS [outer]].
 *
 * Built with -DREGS_API and linked with the runtime (DYNFTRACE_PATCH=
 * target_fn), `regs ROUNDS api` registers callbacks on target_fn itself:
 * a DYNFTRACE_OPS_FL_GPR_ONLY one (the light body of relocated entries:
 * route call_ops), a full one (the preserving trampoline), then both (the
 * list); every call counted exactly, the ip target_fn's, every register
 * kept.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef REGS_API
#include <dynftrace/dynftrace.h>
#endif

#define NGPR 15 /* rax rbx rcx rdx rsi rdi rbp r8-r15 */

struct state {
	uint64_t gpr[NGPR];
	uint64_t pad;
	uint8_t vec[32][64] __attribute__((aligned(64)));
	uint64_t k[8];
};

/* Patterns: GPR i = 0x1111111100000000 * (i + 1) + i; vector byte j of
 * register i = i * 64 + j + 1 (as loaded from pat). */
__attribute__((aligned(64))) uint8_t pat[33][64]; /* row 32: k0-7 */

/* target_fn: its first five bytes (push, mov, nop) are relocated and it
 * changes nothing; outer_fn(out, probe) calls probe(out). */
__asm__(".text\n"
	".globl target_fn\n.type target_fn,@function\n"
	"target_fn:\n"
	"	push %rbp\n	mov %rsp,%rbp\n	nop\n	nop\n	pop %rbp\n	ret\n"
	".size target_fn,.-target_fn\n"
	".globl outer_fn\n.type outer_fn,@function\n"
	"outer_fn:\n"
	"	push %rbp\n	mov %rsp,%rbp\n	nop\n	call *%rsi\n	pop %rbp\n	ret\n"
	".size outer_fn,.-outer_fn\n");

/* PROBE NAME, LOAD, STORE: save the callee-saved registers and OUT, load
 * the vectors (LOAD) and general registers, call target_fn, push the
 * general registers, copy them to OUT, store the vectors (STORE). */
#define GPR_SET                                                                                    \
	"	movabs $0x1111111100000000,%rax\n	movabs $0x2222222200000001,%rbx\n"                     \
	"	movabs $0x3333333300000002,%rcx\n	movabs $0x4444444400000003,%rdx\n"                     \
	"	movabs $0x5555555500000004,%rsi\n	movabs $0x6666666600000005,%rdi\n"                     \
	"	movabs $0x7777777700000006,%rbp\n	movabs $0x8888888800000007,%r8\n"                      \
	"	movabs $0x9999999900000008,%r9\n	movabs $0xaaaaaaaa00000009,%r10\n"                      \
	"	movabs $0xbbbbbbbb0000000a,%r11\n	movabs $0xcccccccc0000000b,%r12\n"                     \
	"	movabs $0xdddddddd0000000c,%r13\n	movabs $0xeeeeeeee0000000d,%r14\n"                     \
	"	movabs $0xffffffff0000000e,%r15\n"
#define GPR_STORE                                                                                  \
	"	push %r15\n	push %r14\n	push %r13\n	push %r12\n	push %r11\n	"                            \
	"push %r10\n"                                                                              \
	"	push %r9\n	push %r8\n	push %rbp\n	push %rdi\n	push %rsi\n	"                              \
	"push %rdx\n"                                                                              \
	"	push %rcx\n	push %rbx\n	push %rax\n"                                                     \
	"	mov 120(%rsp),%rax\n"                                                                    \
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14\n"                                             \
	"	mov \\i*8(%rsp),%rcx\n	mov %rcx,\\i*8(%rax)\n"                                           \
	"	.endr\n"                                                                                 \
	"	add $120,%rsp\n"
#define PROBE(name, load, store)                                                                   \
	__asm__(".text\n.globl " name "\n.type " name ",@function\n" name ":\n"                    \
		"	push %rbx\n	push %rbp\n	push %r12\n	push %r13\n	push "                           \
		"%r14\n	push %r15\n"                                                               \
		"	push %rdi\n" load GPR_SET "	call target_fn\n" GPR_STORE store          \
		"	pop %rdi\n"                                                                      \
		"	pop %r15\n	pop %r14\n	pop %r13\n	pop %r12\n	pop "                                \
		"%rbp\n	pop %rbx\n"                                                                \
		"	ret\n.size " name ",.-" name "\n")

PROBE("probe_sse",
      "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n	movdqu pat+\\i*64(%rip),%xmm\\i\n	"
      ".endr\n",
      "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n	movdqu %xmm\\i,128+\\i*64(%rax)\n	"
      ".endr\n");
PROBE("probe_avx",
      "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n	vmovdqu pat+\\i*64(%rip),%ymm\\i\n	"
      ".endr\n",
      "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n	vmovdqu %ymm\\i,128+\\i*64(%rax)\n	"
      ".endr\n"
      "	vzeroupper\n");
PROBE("probe_avx512",
      "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,"
      "30,31\n	vmovdqu64 pat+\\i*64(%rip),%zmm\\i\n	.endr\n"
      "	.irp i,0,1,2,3,4,5,6,7\n	kmovq pat+2048+\\i*8(%rip),%k\\i\n	.endr\n",
      "	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,"
      "30,31\n	vmovdqu64 %zmm\\i,128+\\i*64(%rax)\n	.endr\n"
      "	.irp i,0,1,2,3,4,5,6,7\n	kmovq %k\\i,128+2048+\\i*8(%rax)\n	.endr\n"
      "	vzeroupper\n");

void probe_sse(struct state *);
void probe_avx(struct state *);
void probe_avx512(struct state *);
void outer_fn(struct state *, void (*)(struct state *));

static const char *const gname[NGPR] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
					"r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

static int run(void (*probe)(struct state *), int rounds, int outer, int nvec, int vlen, int nk)
{
	int bad = 0;
	for (int r = 0; r < rounds && bad < 8; r++) {
		struct state st;
		memset(&st, 0, sizeof(st));
		if (outer)
			outer_fn(&st, probe);
		else
			probe(&st);
		for (int i = 0; i < NGPR; i++) {
			uint64_t want = 0x1111111100000000ull * (uint64_t)(i + 1) + (uint64_t)i;
			if (st.gpr[i] != want && bad++ < 8)
				printf("BAD %s: %#llx, not %#llx\n", gname[i],
				       (unsigned long long)st.gpr[i], (unsigned long long)want);
		}
		for (int i = 0; i < nvec; i++)
			if (memcmp(st.vec[i], pat[i], (size_t)vlen) && bad++ < 8)
				printf("BAD vector register %d (%d bytes)\n", i, vlen);
		/* k registers hold 64 bits with AVX512BW */
		for (int i = 0; i < nk; i++)
			if (memcmp(&st.k[i], &pat[32][i * 8], 8) && bad++ < 8)
				printf("BAD k%d\n", i);
	}
	return bad;
}

#ifdef REGS_API
static unsigned long calls[2], wrong_ip;
void target_fn(void);

#define CB_ATTR __attribute__((target("general-regs-only"), no_sanitize("address", "undefined")))
CB_ATTR static void count_cb(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
			     struct dynftrace_regs *regs)
{
	(void)parent;
	(void)regs;
	__atomic_fetch_add(&calls[op->private != NULL], 1, __ATOMIC_RELAXED);
	if (ip != (unsigned long)(uintptr_t)target_fn)
		__atomic_fetch_add(&wrong_ip, 1, __ATOMIC_RELAXED);
}

static const char *route;
static int route_cb(const struct dynftrace_site_info *si, void *data)
{
	(void)data;
	if (si->func && !strcmp(si->func, "target_fn"))
		route = si->route;
	return 0;
}

/* ROUNDS calls with OPS registered (COUNTS: what each must count), on
 * route WANT. */
static int api_step(const char *what, struct dynftrace_ops **ops, int nops, const char *want,
		    void (*probe)(struct state *), int rounds, int nvec, int vlen, int nk)
{
	int bad = 0;
	calls[0] = calls[1] = wrong_ip = 0;
	for (int i = 0; i < nops; i++)
		if (dynftrace_set_filter(ops[i], "target_fn", 1) || dynftrace_register_ops(ops[i]))
			return printf("BAD %s: cannot register\n", what), 1;
	route = NULL;
	dynftrace_for_each_site_info(route_cb, NULL);
	if (!route || strcmp(route, want))
		bad++, printf("BAD %s: route %s, not %s\n", what, route ? route : "none", want);
	bad += run(probe, rounds, 0, nvec, vlen, nk);
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

static int api(void (*probe)(struct state *), int rounds, int nvec, int vlen, int nk)
{
	static struct dynftrace_ops light = {.func = count_cb, .flags = DYNFTRACE_OPS_FL_GPR_ONLY};
	static struct dynftrace_ops full = {.func = count_cb, .private = &full};
	struct dynftrace_ops *both[] = {&light, &full};
	int bad = api_step("light", both, 1, "call_ops", probe, rounds, nvec, vlen, nk);
	bad += api_step("full", both + 1, 1, "ops", probe, rounds, nvec, vlen, nk);
	bad += api_step("both", both, 2, "list", probe, rounds, nvec, vlen, nk);
	return bad;
}
#endif

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1000;
	int outer = argc > 2 && !strcmp(argv[2], "outer");
	void (*probe)(struct state *) = probe_sse;
	int nvec = 16, vlen = 16, nk = 0;
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
		probe = probe_avx512;
		nvec = 32, vlen = 64, nk = 8;
	} else if (__builtin_cpu_supports("avx")) {
		probe = probe_avx;
		vlen = 32;
	}
	for (int i = 0; i < 33; i++)
		for (int j = 0; j < 64; j++)
			pat[i][j] = (uint8_t)(i * 64 + j + 1);
	int bad;
#ifdef REGS_API
	if (argc > 2 && !strcmp(argv[2], "api"))
		bad = api(probe, rounds, nvec, vlen, nk);
	else
#endif
		bad = run(probe, rounds, outer, nvec, vlen, nk);
	if (!bad)
		printf("ok %d\n", rounds);
	return bad != 0;
}
