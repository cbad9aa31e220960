/* SPDX-License-Identifier: MIT */
/*
 * reloc.c - aarch64 entry relocation (lib/core/arch.h, "relocation").
 *
 * Instructions are 4 bytes, aligned: no decoder is needed. One word is
 * replaced, the first after a `bti c`/`bti jc` (which stays first: an
 * indirect call lands on it), by `B block`: B is in the Arm ARM's list of
 * instructions that may be written while other threads run them (B2.2.5,
 * see arch.c), and one aligned 32-bit store writes it. The block runs
 *
 *	mov x16, x30     (arch_reloc_pre, before the block's site)
 *	site: NOP or BL  (to the preserving trampoline, tramp.S)
 *	the word's copy, rewritten when it reads the pc
 *	b  entry + 4
 *
 * x16 and x17 (IP0, IP1) are free at a function's entry: a linker veneer
 * or PLT stub may take them on any call (AAPCS64 6.4; GCC's calls clobber
 * them even under -fipa-ra), so the block and the rewrites use them.
 * What a copy changes (T: the original's target, from its own pc):
 *   - ADR, ADRP: `ldr Xd, =T`;
 *   - LDR (literal) of W, X, SW, S, D, Q: the address loaded from the
 *     block's pool into Xt (x16 for the vector forms and XZR), then the
 *     same load through it; PRFM (literal): `prfm op, [x16]` the same way;
 *   - B: `b T` within reach, else `ldr x16, =T; br x16`;
 *   - BL: `ldr x30, =entry+4+4` (the callee returns into the function,
 *     whose unwind tables describe that place, not into the block), then
 *     the jump as B's;
 *   - B.cond, CBZ/CBNZ, TBZ/TBNZ: the inverted condition over the jump as
 *     B's, falling through to the jump back (B.AL/B.NV: the jump alone);
 *   - anything else is copied as is (RET, BR: no fall-through; the jump
 *     back stays, never reached).
 * Refused: a function shorter than a word after its marker; PACIASP/
 * PACIBSP first (the return address the tracers read would be signed:
 * the graph tracer's hook would fail its authentication); BRK (someone's
 * breakpoint); BLR/BLRAA...: an indirect call (arch_reloc.calls: its
 * return address would be the block's); and, the function's size known,
 * any branch of it to the replaced word (a loop head, a self tail call:
 * the branch would go through the block's site again). The word after the
 * marker is never inside a foreign branch's range of replaced bytes (one
 * word: a branch reaches its start or misses it), so arch_reloc_branches
 * only serves entries.c's sweep.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "insn.h"

#define RELOC_WORDS 4 /* the longest rewrite: b.!cond; ldr x30; ldr x16; br x16 */
#define RELOC_LITS  2 /* literals after it */
#define RELOC_MAX   (RELOC_WORDS * 4 + 4 + 4 + RELOC_LITS * 8) /* + jump back + pad */
#define X16	    16

static int refuse(struct arch_reloc *r, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct arch_reloc *r, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return err;
}

static int64_t sext(uint64_t v, int bits)
{
	return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/* The kinds of word this file rewrites or refuses. */
enum kind {
	K_PLAIN,
	K_B,
	K_BL,
	K_BCOND,  /* b.cond imm19 */
	K_CB,	  /* cbz/cbnz imm19 */
	K_TB,	  /* tbz/tbnz imm14 */
	K_ADR,	  /* adr, adrp: Xd = T */
	K_LDRLIT, /* ldr (literal), all forms but PRFM */
	K_PRFM,	  /* prfm (literal) */
	K_ICALL,  /* blr, blraa, blrab, blraaz, blrabz */
	K_BRK,
	K_PAC, /* paciasp, pacibsp */
};

/* Sort V at PC; *T: its branch target or the address it reads. */
static enum kind classify(uint32_t v, uintptr_t pc, uintptr_t *t)
{
	*t = 0;
	if ((v & INSN_B_MASK) == INSN_B || (v & INSN_B_MASK) == INSN_BL) {
		*t = pc + (uintptr_t)(sext(v & 0x03ffffffu, 26) * 4);
		return (v & INSN_B_MASK) == INSN_B ? K_B : K_BL;
	}
	if ((v & 0xff000010u) == 0x54000000u) {
		*t = pc + (uintptr_t)(sext((v >> 5) & 0x7ffff, 19) * 4);
		return K_BCOND;
	}
	if ((v & 0x7e000000u) == 0x34000000u) {
		*t = pc + (uintptr_t)(sext((v >> 5) & 0x7ffff, 19) * 4);
		return K_CB;
	}
	if ((v & 0x7e000000u) == 0x36000000u) {
		*t = pc + (uintptr_t)(sext((v >> 5) & 0x3fff, 14) * 4);
		return K_TB;
	}
	if ((v & 0x1f000000u) == 0x10000000u) {
		int64_t imm = sext(((v >> 5) & 0x7ffff) << 2 | ((v >> 29) & 3), 21);
		if (v & 0x80000000u) /* adrp */
			*t = (pc & ~(uintptr_t)0xfff) + (uintptr_t)(imm * 4096);
		else
			*t = pc + (uintptr_t)imm;
		return K_ADR;
	}
	if ((v & 0x3b000000u) == 0x18000000u) {
		*t = pc + (uintptr_t)(sext((v >> 5) & 0x7ffff, 19) * 4);
		if ((v >> 30) == 3 && !(v & (1u << 26)))
			return K_PRFM;
		return (v >> 30) == 3 ? K_BRK /* unallocated */ : K_LDRLIT;
	}
	/* blr Xn (0xd63f0000), blraa/blrab/blraaz/blrabz (0xd63f08.., 0xd73f08..) */
	if ((v & 0xfffffc1fu) == 0xd63f0000u || (v & 0xfefff800u) == 0xd63f0800u)
		return K_ICALL;
	if ((v & 0xffe0001fu) == 0xd4200000u)
		return K_BRK;
	if (v == INSN_PACIASP || v == 0xd503237fu)
		return K_PAC;
	return K_PLAIN;
}

int arch_reloc_branches(const uint8_t *code, size_t len, uintptr_t addr,
			void (*fn)(uintptr_t target, uintptr_t from, void *ctx), void *ctx)
{
	size_t o = (4 - (addr & 3)) & 3; /* the first aligned word */
	for (; o + 4 <= len; o += 4) {
		uintptr_t t;
		enum kind k = classify(insn_get(code + o), addr + o, &t);
		if (k >= K_B && k <= K_TB)
			fn(t, addr + o, ctx);
	}
	return 0;
}

void arch_reloc_unload(int (*close_lib)(void *))
{
	(void)close_lib; /* no decoder library */
}

size_t arch_reloc_max(void)
{
	return RELOC_MAX;
}

size_t arch_reloc_peek(void)
{
	return 8; /* a marker and the word */
}

/* The block being written: words from its start, then the literal pool. */
struct blk {
	uintptr_t dst;
	uint32_t w[RELOC_WORDS + 1];
	int n;
	uint64_t lit[RELOC_LITS];
	int nlit;
	int litref[RELOC_WORDS + 1]; /* word i loads literal litref[i] - 1 */
};

static void put(struct blk *b, uint32_t v)
{
	b->litref[b->n] = 0;
	b->w[b->n++] = v;
}

/* `ldr Xt, =V` (V in the pool; the offset is set once its place is known). */
static void put_ldr_lit(struct blk *b, int rt, uint64_t v)
{
	b->lit[b->nlit++] = v;
	b->litref[b->n] = b->nlit;
	b->w[b->n++] = 0x58000000u | (uint32_t)rt;
}

/* A jump to T from the next word: B within reach, else through x16. */
static void put_jump(struct blk *b, uintptr_t t)
{
	uintptr_t at = b->dst + (uintptr_t)b->n * 4;
	if (insn_b_ok(at, t)) {
		put(b, insn_b(INSN_B, at, t));
		return;
	}
	put_ldr_lit(b, X16, t);
	put(b, INSN_BR_X16);
}

int arch_reloc_entry(uintptr_t src, const uint8_t *code, size_t avail, size_t fsize, uintptr_t dst,
		     uint8_t *out, size_t outcap, struct arch_reloc *r)
{
	memset(r, 0, sizeof(*r));
	if (!code || !out)
		return refuse(r, -EINVAL, "no code or no output buffer");
	if ((src | dst) & 3)
		return refuse(r, -EINVAL, "a misaligned function or block");
	if (fsize && avail < fsize)
		return refuse(r, -EINVAL, "%zu bytes given of a %zu-byte function", avail, fsize);
	size_t lim = fsize ? fsize : avail;
	if (lim >= 4 && (insn_get(code) == INSN_BTI_C || insn_get(code) == INSN_BTI_JC))
		r->marker = 4; /* bti c / bti jc: stays first */
	if (lim < r->marker + (size_t)INSN_SIZE)
		return refuse(r, fsize ? -ENOTSUP : -EINVAL,
			      "a %zu-byte function: no word after %u", lim, r->marker);

	uintptr_t pc = src + r->marker, back = pc + INSN_SIZE, t;
	uint32_t v = insn_get(code + r->marker);
	enum kind k = classify(v, pc, &t);
	switch (k) {
	case K_PAC:
		return refuse(r, -ENOTSUP,
			      "signs its return address first (pac): the tracers would see it "
			      "signed");
	case K_BRK:
		return refuse(r, -ENOTSUP,
			      "brk (or an unallocated literal load) at +%u: someone "
			      "else's breakpoint",
			      r->marker);
	default:
		break;
	}
	if (!insn_b_ok(dst, back) || !insn_b_ok(dst + RELOC_MAX, back))
		return refuse(r, -ERANGE, "the block is out of B reach of the function");

	/* Branches of the function to the replaced word: they would run the
	 * block's site again, as a new call. */
	if (!fsize) {
		r->unscanned = 1;
	} else {
		for (size_t o = 0; o + 4 <= fsize; o += 4) {
			uintptr_t bt;
			enum kind bk = classify(insn_get(code + o), src + o, &bt);
			if (o != r->marker && bk >= K_B && bk <= K_TB && bt == pc)
				return refuse(r, -ENOTSUP,
					      "a branch at +%#zx targets +%u, the relocated "
					      "instruction (a loop head)",
					      o, r->marker);
		}
	}

	struct blk b = {.dst = dst};
	uint32_t cond;
	switch (k) {
	case K_B:
		put_jump(&b, t);
		break;
	case K_BL:
		put_ldr_lit(&b, 30, back);
		r->call_pushed = 4; /* x30 set, the jump not taken yet */
		r->call_target = t;
		put_jump(&b, t);
		break;
	case K_BCOND:
		cond = v & 15;
		if (cond >= 14) { /* AL, NV: always */
			put_jump(&b, t);
			break;
		}
		/* b.!cond over the jump, to the jump back */
		put(&b, 0x54000000u | (cond ^ 1));
		put_jump(&b, t);
		b.w[0] |= (uint32_t)b.n << 5;
		break;
	case K_CB:
	case K_TB:
		/* the opposite test (bit 24) over the jump */
		put(&b, (v ^ (1u << 24)) & (k == K_CB ? ~(0x7ffffu << 5) : ~(0x3fffu << 5)));
		put_jump(&b, t);
		b.w[0] |= (uint32_t)b.n << 5;
		break;
	case K_ADR:
		if ((v & 31) != 31)
			put_ldr_lit(&b, (int)(v & 31), t);
		/* else: to XZR, nothing happens */
		break;
	case K_LDRLIT: {
		int rt = (int)(v & 31), opc = (int)(v >> 30), simd = (v >> 26) & 1;
		int base = simd || rt == 31 ? X16 : rt;
		static const uint32_t gpr[3] = {0xb9400000u, 0xf9400000u, 0xb9800000u};
		static const uint32_t fp[3] = {0xbd400000u, 0xfd400000u, 0x3dc00000u};
		put_ldr_lit(&b, base, t);
		put(&b, (simd ? fp : gpr)[opc] | (uint32_t)base << 5 | (uint32_t)rt);
		break;
	}
	case K_PRFM:
		put_ldr_lit(&b, X16, t);
		put(&b, 0xf9800000u | (uint32_t)X16 << 5 | (v & 31));
		break;
	case K_ICALL:
		r->calls = 1; /* entries.c refuses it; the copy is exact all the same */
		put(&b, v);
		break;
	default:
		put(&b, v);
		break;
	}
	r->end = (uint8_t)(b.n * 4);
	put(&b, insn_b(INSN_B, dst + (uintptr_t)b.n * 4, back));

	/* The pool, 8-aligned in the block's memory. */
	size_t pool = (size_t)b.n * 4;
	if (b.nlit)
		pool += (size_t)((8 - ((dst + pool) & 7)) & 7);
	size_t len = pool + (size_t)b.nlit * 8;
	if (len > outcap)
		return refuse(r, -EINVAL, "the block takes %zu bytes, OUT holds %zu", len, outcap);
	for (int i = 0; i < b.n; i++) {
		uint32_t w = b.w[i];
		if (b.litref[i]) {
			size_t at = pool + (size_t)(b.litref[i] - 1) * 8;
			w |= (uint32_t)((at - (size_t)i * 4) >> 2) << 5; /* forward: positive */
		}
		insn_put(out + i * 4, w);
	}
	if (pool > (size_t)b.n * 4)
		insn_put(out + b.n * 4, INSN_BRK);
	memcpy(out + pool, b.lit, (size_t)b.nlit * 8);
	r->covered = INSN_SIZE;
	r->ninsn = 1;
	r->map[0].src = r->marker;
	r->map[0].dst = 0;
	r->len = (uint16_t)len;
	return 0;
}
