/* SPDX-License-Identifier: MIT */
/*
 * fuzz.c - differential test of arch_reloc_entry: random valid instruction
 * sequences (from templates: ALU on registers, loads and stores relative to
 * RIP or to a register into a scratch buffer, push/pop, forward jcc/jmp/loop,
 * bounded backward loops, calls to a helper) make a function in an RWX page;
 * its entry is relocated to a block in reach (1.5 GiB away) and to one out
 * of it (absolute forms). A forked child runs the function as it is, then
 * with its entry jumping to each block (the rest of the replaced bytes int3),
 * from the same registers, flags and scratch memory, and reports all of
 * them: any difference is a failure, printed with the bytes.
 *
 * Usage: fuzz SEED ITERATIONS. TAP.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch.h"
#include "../unit/tap.h"

#define SCRATCH 512
#define FLAGS	0xcd5 /* CF PF AF ZF SF DF OF */

/* The general registers by encoding number (r[4], rsp: the change of rsp
 * across the call, 0), and rflags. */
struct cpu {
	uint64_t r[16];
	uint64_t flags;
};

/* h_run: load IN, call ENTRY, store everything into OUT. */
void h_run(const struct cpu *in, struct cpu *out, uintptr_t entry);
__asm__(
    ".text\n"
    ".globl h_run\n"
    ".type h_run, @function\n"
    "h_run:\n"
    "	push %rbx\n	push %rbp\n	push %r12\n	push %r13\n	push %r14\n	push %r15\n"
    "	mov %rsi, h_out(%rip)\n"
    "	mov %rdx, h_entry(%rip)\n"
    "	mov %rsp, h_sp(%rip)\n"
    "	pushq 128(%rdi)\n	popfq\n"
    "	mov 0(%rdi), %rax\n	mov 8(%rdi), %rcx\n	mov 16(%rdi), %rdx\n"
    "	mov 24(%rdi), %rbx\n	mov 40(%rdi), %rbp\n	mov 48(%rdi), %rsi\n"
    "	mov 64(%rdi), %r8\n	mov 72(%rdi), %r9\n	mov 80(%rdi), %r10\n"
    "	mov 88(%rdi), %r11\n	mov 96(%rdi), %r12\n	mov 104(%rdi), %r13\n"
    "	mov 112(%rdi), %r14\n	mov 120(%rdi), %r15\n	mov 56(%rdi), %rdi\n"
    "	call *h_entry(%rip)\n"
    "	pushfq\n	push %rdi\n"
    "	mov h_out(%rip), %rdi\n"
    "	mov %rax, 0(%rdi)\n	mov %rcx, 8(%rdi)\n	mov %rdx, 16(%rdi)\n"
    "	mov %rbx, 24(%rdi)\n	mov %rbp, 40(%rdi)\n	mov %rsi, 48(%rdi)\n"
    "	mov %r8, 64(%rdi)\n	mov %r9, 72(%rdi)\n	mov %r10, 80(%rdi)\n"
    "	mov %r11, 88(%rdi)\n	mov %r12, 96(%rdi)\n	mov %r13, 104(%rdi)\n"
    "	mov %r14, 112(%rdi)\n	mov %r15, 120(%rdi)\n"
    "	pop %rax\n	mov %rax, 56(%rdi)\n"
    "	pop %rax\n	mov %rax, 128(%rdi)\n"
    "	mov %rsp, %rax\n	sub h_sp(%rip), %rax\n	mov %rax, 32(%rdi)\n"
    "	cld\n"
    "	pop %r15\n	pop %r14\n	pop %r13\n	pop %r12\n	pop %rbp\n	pop %rbx\n"
    "	ret\n"
    ".size h_run, . - h_run\n"
    ".pushsection .bss\n"
    ".balign 8\n"
    "h_out: .zero 8\n"
    "h_entry: .zero 8\n"
    "h_sp: .zero 8\n"
    ".popsection\n");

/* ---- the generator ------------------------------------------------------- */

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}
static int below(int n)
{
	return (int)(rnd() % (uint64_t)n);
}

enum { FX_NONE, FX_FWD, FX_BACK, FX_SCRATCH, FX_HELPER };
/* What a relocated entry held, for the coverage figures. */
enum { C_RIP, C_JCC, C_JMP, C_LOOP, C_CALL, C_BACK, C_NCAT };
static const char *const cat_name[C_NCAT] = {"RIP-relative", "jcc",	   "jmp",
					     "loop/jrcxz",   "call rel32", "backward jcc"};

/* One template instance: its bytes, and a displacement (FIX_LEN bytes at
 * B[FIX_AT], relative to B[FIX_END]) to fill once addresses are known. */
struct unit {
	uint8_t b[24];
	int size, off, cat;
	int fx, fix_at, fix_len, fix_end;
	int sofs;   /* FX_SCRATCH: the operand's offset in the scratch buffer */
	int target; /* FX_FWD, FX_BACK: a unit index (the count: the end) */
};

/* Registers the templates change: not rsp, r13 (the scratch base), r14
 * (the backward branches' counter). */
static const int regs[] = {0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 15};
static int reg(void)
{
	return regs[below((int)ARRAY_SIZE(regs))];
}
static uint8_t rex(int w, int r, int x, int b)
{
	return (uint8_t)(0x40 | w << 3 | (r >> 3) << 2 | (x >> 3) << 1 | (b >> 3));
}
static uint8_t modrm(int mod, int r, int rm)
{
	return (uint8_t)(mod << 6 | (r & 7) << 3 | (rm & 7));
}

#define B(x) (u->b[u->size++] = (uint8_t)(x))
static void imm(struct unit *u, int n)
{
	uint64_t v = rnd();
	for (int i = 0; i < n; i++)
		B(v >> (8 * i));
}
static void fix(struct unit *u, int fx, int len)
{
	u->fx = fx, u->fix_at = u->size, u->fix_len = len;
	for (int i = 0; i < len; i++)
		B(0);
	u->fix_end = u->size;
}
static void alu_rr(struct unit *u)
{
	static const uint8_t op[] = {0x01, 0x09, 0x11, 0x19, 0x21, 0x29,
				     0x31, 0x39, 0x85, 0x89, 0x87};
	int a = reg(), b = reg();
	B(rex(1, a, 0, b)), B(op[below(sizeof(op))]), B(modrm(3, a, b));
}

static void gen_unit(struct unit *u)
{
	static const uint8_t ld[] = {0x8b, 0x03, 0x2b, 0x33, 0x3b, 0x85, 0x8d};
	static const uint8_t st[] = {0x89, 0x01, 0x21, 0x09, 0x31};
	static const uint8_t sh[] = {0, 1, 4, 5, 7};
	int a = reg(), b = reg(), k = below(36);

	memset(u, 0, sizeof(*u));
	u->cat = -1;
	switch (k) {
	case 0: /* alu r64, r64 */
	case 1:
		alu_rr(u);
		break;
	case 2: /* alu r32, r32 */
		if ((a | b) & 8)
			B(rex(0, a, 0, b));
		B(0x01 + 8 * below(8)), B(modrm(3, a, b));
		break;
	case 3: /* alu r64, imm8 */
		B(rex(1, 0, 0, a)), B(0x83), B(modrm(3, below(8), a)), imm(u, 1);
		break;
	case 4: /* alu r64, imm32 */
		B(rex(1, 0, 0, a)), B(0x81), B(modrm(3, below(8), a)), imm(u, 4);
		break;
	case 5: /* mov $imm32, r32 */
		if (a & 8)
			B(0x41);
		B(0xb8 + (a & 7)), imm(u, 4);
		break;
	case 6: /* movabs $imm64, r64 */
		B(rex(1, 0, 0, a)), B(0xb8 + (a & 7)), imm(u, 8);
		break;
	case 7: /* inc, dec, not, neg */
		b = below(4);
		B(rex(1, 0, 0, a)), B(b < 2 ? 0xff : 0xf7), B(modrm(3, b, a));
		break;
	case 8: /* shifts and rotates by imm8 */
		B(rex(1, 0, 0, a)), B(0xc1), B(modrm(3, sh[below(5)], a)), B(1 + below(63));
		break;
	case 9: /* cmovcc */
		B(rex(1, a, 0, b)), B(0x0f), B(0x40 | below(16)), B(modrm(3, a, b));
		break;
	case 10: /* setcc r8 */
		B(rex(0, 0, 0, a)), B(0x0f), B(0x90 | below(16)), B(modrm(3, 0, a));
		break;
	case 11: { /* lea d8(base, index, scale), r64 */
		int x = reg();
		B(rex(1, a, x, b)), B(0x8d), B(modrm(1, a, 4));
		B(below(4) << 6 | (x & 7) << 3 | (b & 7)), imm(u, 1);
		break;
	}
	case 12: /* imul, movzx, bswap */
		if (below(3) == 0)
			B(rex(1, a, 0, b)), B(0x0f), B(0xaf), B(modrm(3, a, b));
		else if (below(2))
			B(rex(1, a, 0, b)), B(0x0f), B(0xb6), B(modrm(3, a, b));
		else
			B(rex(1, 0, 0, a)), B(0x0f), B(0xc8 + (a & 7));
		break;
	case 13: /* op d8(%r13), r64: r13 is scratch + 256 */
		B(rex(1, a, 0, 13)), B(ld[below(sizeof(ld))]), B(modrm(1, a, 13)),
		    B(-128 + below(249));
		break;
	case 14: /* op r64, d8(%r13) */
		B(rex(1, a, 0, 13)), B(st[below(sizeof(st))]), B(modrm(1, a, 13)),
		    B(-128 + below(249));
		break;
	case 15: /* op disp(%rip), r64: anywhere in the scratch */
	case 16:
		B(rex(1, a, 0, 0)), B(ld[below(sizeof(ld))]), B(modrm(0, a, 5));
		fix(u, FX_SCRATCH, 4), u->sofs = below(SCRATCH - 8), u->cat = C_RIP;
		break;
	case 17: /* op r64, disp(%rip): not over the two address slots */
		B(rex(1, a, 0, 0)), B(st[below(sizeof(st))]), B(modrm(0, a, 5));
		fix(u, FX_SCRATCH, 4), u->sofs = 16 + below(SCRATCH - 24), u->cat = C_RIP;
		break;
	case 18: /* op $imm8, disp(%rip): the immediate after the displacement */
		if (below(2))
			B(0x48);
		B(0x83), B(modrm(0, below(8), 5)), fix(u, FX_SCRATCH, 4), imm(u, 1);
		u->fix_end = u->size; /* RIP is the instruction's end */
		u->sofs = 16 + below(SCRATCH - 24), u->cat = C_RIP;
		break;
	case 19: /* movl $imm32, disp(%rip) or cmpb $imm8, disp(%rip) */
		if (below(2))
			B(0xc7), B(0x05), fix(u, FX_SCRATCH, 4), imm(u, 4);
		else
			B(0x80), B(0x3d), fix(u, FX_SCRATCH, 4), imm(u, 1);
		u->fix_end = u->size;
		u->sofs = 16 + below(SCRATCH - 24), u->cat = C_RIP;
		break;
	case 20: /* push; alu; pop */
		if (a & 8)
			B(0x41);
		B(0x50 + (a & 7));
		alu_rr(u);
		if (b & 8)
			B(0x41);
		B(0x58 + (b & 7));
		break;
	case 21: /* jcc rel8, forward */
	case 22:
		B(0x70 | below(16)), fix(u, FX_FWD, 1), u->cat = C_JCC;
		break;
	case 23: /* jcc rel32, forward */
		B(0x0f), B(0x80 | below(16)), fix(u, FX_FWD, 4), u->cat = C_JCC;
		break;
	case 24: /* jmp rel8 / rel32, forward */
		if (below(2))
			B(0xeb), fix(u, FX_FWD, 1);
		else
			B(0xe9), fix(u, FX_FWD, 4);
		u->cat = C_JMP;
		break;
	case 25: /* loopne, loope, loop, jrcxz (addr32: ecx), forward */
	case 26:
		if (below(4) == 0)
			B(0x67);
		B(0xe0 + below(4)), fix(u, FX_FWD, 1), u->cat = C_LOOP;
		break;
	case 27: /* call rel32 to the helper */
	case 28:
		B(0xe8), fix(u, FX_HELPER, 4), u->cat = C_CALL;
		break;
	case 29: /* call *slot0(%rip): the helper */
		B(0xff), B(0x15), fix(u, FX_SCRATCH, 4), u->sofs = 0, u->cat = C_RIP;
		break;
	case 30: /* jmp *slot8(%rip): the end */
		if (below(3) == 0)
			B(0xff), B(0x25), fix(u, FX_SCRATCH, 4), u->sofs = 8, u->cat = C_RIP;
		else
			B(0x90);
		break;
	case 31: /* sub $1, %r14; jg back (at most twice in all: r14 is 3) */
	case 32:
		B(0x49), B(0x83), B(0xee), B(0x01);
		if (below(2))
			B(0x7f), fix(u, FX_BACK, 1);
		else
			B(0x0f), B(0x8f), fix(u, FX_BACK, 4);
		u->cat = C_BACK;
		break;
	case 33: /* nops */
		if (below(2))
			B(0x90);
		else
			B(0x0f), B(0x1f), B(0x44), B(0), B(0);
		break;
	case 34: /* ret, seldom */
		if (below(4) == 0)
			B(0xc3);
		else
			alu_rr(u);
		break;
	default:
		alu_rr(u);
		break;
	}
}

/* ---- one sequence -------------------------------------------------------- */

#define MAXU 16
static struct unit u[MAXU + 1];
static int nu, marker, end_off, helper_off, fsize;
static uint8_t *F, *S, *N, *X; /* function, scratch, near and far block pages */
static uint8_t scratch0[SCRATCH];
static uint8_t fcopy[4096];

/* A target for unit I's branch: forward to a later unit or the end, or
 * backward to an earlier one or itself, in rel8 reach when it is rel8. */
static int pick(int i)
{
	int from = u[i].off + u[i].fix_end, c[MAXU + 1], n = 0;
	for (int j = 0; j <= nu; j++) {
		int d = (j == nu ? end_off : u[j].off) - from;
		if (u[i].fx == FX_FWD ? j <= i : j > i)
			continue;
		if (u[i].fix_len == 1 && (d < -128 || d > 127))
			continue;
		c[n++] = j;
	}
	/* near ones more often: the first bytes are what matters */
	return u[i].fx == FX_FWD && below(2) ? c[below(n < 3 ? n : 3)] : c[below(n)];
}

static void put(uint8_t *p, int len, intptr_t d)
{
	int32_t v = (int32_t)d;
	if (len == 1)
		*p = (uint8_t)(int8_t)d;
	else
		memcpy(p, &v, 4);
}

static void gen_function(void)
{
	nu = 2 + below(MAXU - 1);
	marker = below(2) ? 4 : 0;
	int off = marker;
	for (int i = 0; i < nu; i++) {
		gen_unit(&u[i]);
		u[i].off = off;
		off += u[i].size;
	}
	end_off = off;
	for (int i = 0; i < nu; i++)
		if (u[i].fx == FX_FWD || u[i].fx == FX_BACK)
			u[i].target = pick(i);

	memset(F, 0xcc, 4096);
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	memcpy(F, endbr64, (size_t)marker);
	for (int i = 0; i < nu; i++) {
		struct unit *v = &u[i];
		uint8_t *p = F + v->off;
		uintptr_t end = (uintptr_t)p + (uintptr_t)v->fix_end, t = 0;
		memcpy(p, v->b, (size_t)v->size);
		if (v->fx == FX_FWD || v->fx == FX_BACK)
			t = (uintptr_t)F +
			    (uintptr_t)(v->target == nu ? end_off : u[v->target].off);
		else if (v->fx == FX_SCRATCH)
			t = (uintptr_t)S + (uintptr_t)v->sofs;
		else if (v->fx == FX_HELPER)
			t = (uintptr_t)F + (uintptr_t)((end_off + 8) & ~7);
		if (v->fx)
			put(p + v->fix_at, v->fix_len, (intptr_t)(t - end));
	}
	F[end_off] = 0xc3;
	/* the helper: lea 0x11(%rax,%rbx), %rax; xor %rax, %rcx; ret */
	helper_off = (end_off + 8) & ~7;
	static const uint8_t helper[] = {0x48, 0x8d, 0x44, 0x18, 0x11, 0x48, 0x31, 0xc1, 0xc3};
	memcpy(F + helper_off, helper, sizeof(helper));
	fsize = helper_off + (int)sizeof(helper);
	memcpy(fcopy, F, sizeof(fcopy));

	for (int i = 0; i < SCRATCH; i++)
		scratch0[i] = (uint8_t)rnd();
	uintptr_t slot[2] = {(uintptr_t)F + (uintptr_t)helper_off,
			     (uintptr_t)F + (uintptr_t)end_off};
	memcpy(scratch0, slot, sizeof(slot));
}

static void gen_cpu(struct cpu *c)
{
	for (int i = 0; i < 16; i++)
		c->r[i] = below(4) ? rnd() : (uint64_t)below(3);
	c->r[4] = 0;
	c->r[13] = (uint64_t)(uintptr_t)S + 256;
	c->r[14] = 3;
	c->flags = 0x202 | (rnd() & FLAGS);
}

/* ---- running ------------------------------------------------------------- */

struct result {
	int done;
	struct cpu out;
	uint8_t scratch[SCRATCH];
};
static struct result *res; /* shared with the child: [0] original, [1] near, [2] far */

struct attempt {
	int rc;
	uintptr_t dst;
	struct arch_reloc r;
	uint8_t block[256];
};

/* The child: the function as it is, then entered through each block. */
static void child(const struct cpu *in, struct attempt *at)
{
	alarm(5);
	for (int k = 0; k < 3; k++) {
		if (k && at[k - 1].rc)
			continue;
		memcpy(S, scratch0, SCRATCH);
		if (k) {
			struct arch_reloc *r = &at[k - 1].r;
			uint8_t *e = F + r->marker;
			/* the far block through a stub in reach */
			uintptr_t to = k == 1 ? at[0].dst : (uintptr_t)F + 4096;
			int32_t d = (int32_t)(intptr_t)(to - ((uintptr_t)e + 5));
			e[0] = 0xe9;
			memcpy(e + 1, &d, 4);
			memset(e + 5, 0xcc, r->covered - 5u);
		}
		h_run(in, &res[k].out, (uintptr_t)F);
		memcpy(res[k].scratch, S, SCRATCH);
		res[k].done = 1;
		memcpy(F, fcopy, sizeof(fcopy));
	}
	_exit(0);
}

static void hex(const char *what, const uint8_t *p, int n)
{
	char line[3 * 256 + 1];
	int o = 0;
	for (int i = 0; i < n && i < 256; i++)
		o += snprintf(line + o, sizeof(line) - (size_t)o, "%02x ", p[i]);
	diag("%s: %s", what, line);
}

/* ---- reasons ------------------------------------------------------------- */

#define NREASON 48
static struct {
	char text[96];
	int n[2];
} reason[NREASON];

/* Count R's refusal, its offsets and the mnemonic of an out-of-reach
 * operand left out. */
static void count_reason(int far, const char *why)
{
	char t[96];
	size_t o = 0;
	const char *w = strstr(why, "RIP-relative operand is out of reach")
			    ? "RIP-relative operand is out of reach"
			    : why;
	for (const char *p = w; *p && o + 3 < sizeof(t);) {
		if (p[0] == '+' && p[1] >= '0' && p[1] <= '9') {
			t[o++] = '+', t[o++] = 'N', p++;
			while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == 'x')
				p++;
		} else {
			t[o++] = *p++;
		}
	}
	t[o] = 0;
	for (int i = 0; i < NREASON; i++) {
		if (!reason[i].text[0])
			snprintf(reason[i].text, sizeof(reason[i].text), "%s", t);
		if (!strcmp(reason[i].text, t)) {
			reason[i].n[far]++;
			return;
		}
	}
}

static void *map_near(void *hint, int prot)
{
	void *p =
	    mmap(hint, 4096 * 2, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	int iters = argc > 2 ? atoi(argv[2]) : 2000;
	int rwx = PROT_READ | PROT_WRITE | PROT_EXEC;
	const uintptr_t GiB = (uintptr_t)1 << 30;

	F = mmap(NULL, 4096 * 2, rwx, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	res =
	    mmap(NULL, sizeof(*res) * 3, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (F == MAP_FAILED || res == MAP_FAILED)
		return ok(0, "mmap: %s", strerror(errno)), 1;
	for (uintptr_t d = 64 * 4096; !S && d < 64 * GiB; d *= 2)
		S = map_near(F + d, PROT_READ | PROT_WRITE);
	/* the near block 1.5 GiB away, the far one tens of GiB away */
	N = map_near(F + 3 * GiB / 2, rwx);
	if (!N)
		N = map_near(F - 3 * GiB / 2, rwx);
	X = map_near(F - 48 * GiB, rwx);
	if (!X)
		X = map_near(F + 48 * GiB, rwx);
	if (!S || !N || !X)
		return ok(0, "mapping the pages: %p %p %p", (void *)S, (void *)N, (void *)X), 1;
	diag("function %p, scratch %p, near block page %p, far %p", (void *)F, (void *)S, (void *)N,
	     (void *)X);

	struct attempt at[2];
	int tried = 0, relocated[2] = {0}, mismatch = 0, crashed = 0, ran = 0;
	int cover[C_NCAT][2] = {{0}};
	for (int it = 0; it < iters; it++) {
		rng = seed * 0x9e3779b97f4a7c15ull + (uint64_t)it + 1;
		for (int i = 0; i < 4; i++)
			rnd();
		gen_function();
		tried++;
		int any = 0;
		for (int k = 0; k < 2; k++) {
			uint8_t *page = k ? X : N;
			at[k].dst = (uintptr_t)page + (uintptr_t)below(4096 - 256);
			at[k].rc =
			    arch_reloc_entry((uintptr_t)F, F, (size_t)fsize, (size_t)fsize,
					     at[k].dst, at[k].block, sizeof(at[k].block), &at[k].r);
			if (at[k].rc) {
				count_reason(k, at[k].r.why);
				continue;
			}
			memcpy((void *)at[k].dst, at[k].block, at[k].r.len);
			relocated[k]++;
			any = 1;
			int covered = marker + at[k].r.covered;
			for (int i = 0; i < nu && u[i].off < covered; i++)
				if (u[i].cat >= 0)
					cover[u[i].cat][k]++;
		}
		if (!any)
			continue;
		/* the stub that takes the entry's jump on to the far block */
		static const uint8_t jmp_rip[6] = {0xff, 0x25, 0, 0, 0, 0};
		memcpy(F + 4096, jmp_rip, 6);
		memcpy(F + 4096 + 6, &at[1].dst, 8);

		struct cpu in;
		gen_cpu(&in);
		memset(res, 0, sizeof(*res) * 3);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			child(&in, at);
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return ok(0, "fork/wait: %s", strerror(errno)), 1;
		ran++;

		int bad = 0;
		char what[160] = "";
		if (!res[0].done) {
			crashed++;
			bad = 1;
			snprintf(what, sizeof(what), "the original died (status %#x)", st);
		}
		for (int k = 0; k < 2 && !bad; k++) {
			struct result *a = &res[0], *b = &res[k + 1];
			if (at[k].rc)
				continue;
			if (!b->done) {
				snprintf(what, sizeof(what), "%s block died (status %#x)",
					 k ? "far" : "near", st);
				bad = 1;
				break;
			}
			for (int i = 0; i < 16 && !bad; i++)
				if (a->out.r[i] != b->out.r[i])
					snprintf(what, sizeof(what),
						 "%s: register %d %#" PRIx64 " vs %#" PRIx64,
						 k ? "far" : "near", i, a->out.r[i], b->out.r[i]),
					    bad = 1;
			if (!bad && ((a->out.flags ^ b->out.flags) & FLAGS))
				snprintf(what, sizeof(what), "%s: flags %#" PRIx64 " vs %#" PRIx64,
					 k ? "far" : "near", a->out.flags, b->out.flags),
				    bad = 1;
			if (!bad && memcmp(a->scratch, b->scratch, SCRATCH))
				snprintf(what, sizeof(what), "%s: scratch memory differs",
					 k ? "far" : "near"),
				    bad = 1;
		}
		if (bad && ++mismatch <= 5) {
			diag("seed %" PRIu64 " iteration %d: %s", seed, it, what);
			hex("function", fcopy, fsize);
			for (int k = 0; k < 2; k++)
				if (!at[k].rc)
					hex(k ? "far block" : "near block", at[k].block,
					    at[k].r.len);
		}
	}

	diag("seed %" PRIu64 ": %d sequences, %d run; relocated near %d, far %d", seed, tried, ran,
	     relocated[0], relocated[1]);
	for (int i = 0; i < NREASON && reason[i].text[0]; i++)
		diag("refused near %d, far %d: %s", reason[i].n[0], reason[i].n[1], reason[i].text);
	for (int c = 0; c < C_NCAT; c++)
		diag("relocated with a %s instruction in the first bytes: near %d, far %d",
		     cat_name[c], cover[c][0], cover[c][1]);
	ok(crashed == 0, "the generated functions run: %d died", crashed);
	ok(mismatch == 0, "%d runs, original and relocated alike: %d mismatches", ran, mismatch);
	int all = 1;
	for (int c = 0; c < C_NCAT; c++)
		all &= cover[c][0] > 0 && (c == C_RIP || cover[c][1] > 0);
	ok(relocated[0] > tried / 4 && relocated[1] > tried / 8 && all,
	   "every rule exercised, near and far");
	return tap_failed != 0;
}
