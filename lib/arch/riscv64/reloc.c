/* SPDX-License-Identifier: MIT */
/*
 * reloc.c - riscv64 entry relocation (lib/core/arch.h, "relocation").
 *
 * Instructions are 4 bytes, or 2 with the C extension (RVC), 2-aligned;
 * the length is in the low bits (not 11: 16 bits), so no decoder library
 * is needed. The entry's first 4 bytes become `jal x0, block`.
 *
 * Getting in. The patched bytes must be one aligned 32-bit store: a hart
 * fetches an aligned word whole, old or new (Ziccif; see arch.c), while an
 * 8-byte `auipc; jalr` pair could be run half old, half new, and needs a
 * scratch register that code built without sites (gcc's -fipa-ra callers)
 * may not give up at the entry. So the entry is one `jal x0` (+-1 MiB) and
 * the block must lie within its reach (entries.c maps the arena just
 * below or above the object's code, sites_map_near): else -ERANGE. The
 * block's own site, before the copies, is entries.c's and arch_impl.h's
 * (arch_reloc_pre/post keep t0 around it). A function on a 2-byte boundary
 * (gcc aligns functions to 2 with RVC unless told -falign-functions=4)
 * has no aligned word at its entry: refused.
 *
 * What the word covers: one 4-byte instruction; two compressed ones; or
 * a compressed one and a 4-byte one that crosses the word (covered 6:
 * the jump back goes past it; its second half is never run in place).
 * Each is copied to the block, rewritten when it reads the pc (T: the
 * original's target, from its own pc):
 *   - auipc rd: `auipc rd; addi rd, rd` giving rd = T (x0: a hint, dropped);
 *   - jal x0 (j), c.j: `jal x0, T`;
 *   - jal rd (a call; rd ra, or t0 for -msave-restore's millicode): rd =
 *     the original's return address by auipc+addi (the callee returns into
 *     the function, whose unwind tables describe that place), then
 *     `jal x0, T`;
 *   - beq..bgeu, c.beqz, c.bnez: the inverted branch over `jal x0, T`,
 *     falling through to the next copy;
 *   - c.jal is RV32's: on RV64 its encoding is c.addiw, copied as is;
 *   - anything else as is (jalr x0 and c.jr: no fall-through).
 * No scratch register is used: a target out of the block's jal reach is
 * refused (-ERANGE) rather than jumped to through one; branch targets in
 * the function are within reach of any block within reach of its entry
 * but for the last few KiB of the 1 MiB.
 * Refused: ebreak and c.ebreak (someone's breakpoint); lr.w/lr.d (its sc
 * would follow a jump: the ISA's forward-progress rule for LR/SC allows
 * none); an instruction longer than 4 bytes or zero bytes (illegal); a
 * return or jump before byte 4 unless the function's size says the rest
 * of the word is its own (else the word may hold the next function);
 * jalr rd/c.jalr (an indirect call: arch_reloc.calls, entries.c refuses:
 * its return address would be the block's); and, the size known, any
 * branch of the function into the covered bytes (a loop head, a self
 * tail call: it would run the block's site again, or land inside the
 * jal). entries.c's sweep (arch_reloc_branches) finds other functions'.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "insn.h"

/* The longest block: c.beqz's 8 bytes then a crossing jal rd's 12, the
 * jump back, padding. */
#define RELOC_MAX 32
#define COVER	  4 /* bytes the entry's jal replaces */

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

enum kind {
	K_PLAIN,
	K_AUIPC,
	K_JAL,	  /* jal rd (rd 0: j) */
	K_BRANCH, /* beq..bgeu */
	K_CJ,	  /* c.j */
	K_CBZ,	  /* c.beqz, c.bnez */
	K_STOP,	  /* no fall-through, not pc-relative: jalr x0, c.jr */
	K_ICALL,  /* jalr rd, c.jalr */
	K_BRK,	  /* ebreak, c.ebreak */
	K_LR,	  /* lr.w, lr.d */
	K_BAD,	  /* zero bytes (illegal), longer than 4 bytes */
};

/* The instruction's length from its first halfword (2 or 4; 0: longer). */
static int insn_len(uint16_t h)
{
	if ((h & 3) != 3)
		return 2;
	return (h & 0x1c) != 0x1c ? 4 : 0;
}

static uint32_t get(const uint8_t *p, int len)
{
	uint16_t lo, hi = 0;
	memcpy(&lo, p, 2);
	if (len == 4)
		memcpy(&hi, p + 2, 2);
	return (uint32_t)hi << 16 | lo;
}

/* Sort V (LEN bytes) at PC; *T: its branch target or auipc's value. */
static enum kind classify(uint32_t v, int len, uintptr_t pc, uintptr_t *t)
{
	*t = 0;
	if (len == 2) {
		unsigned q = v & 3, f3 = (v >> 13) & 7;
		if (v == 0)
			return K_BAD;
		if (q == 1 && f3 == 5) { /* c.j: imm[11|4|9:8|10|6|7|3:1|5] */
			uint32_t d = ((v >> 12) & 1) << 11 | ((v >> 11) & 1) << 4 |
				     ((v >> 9) & 3) << 8 | ((v >> 8) & 1) << 10 |
				     ((v >> 7) & 1) << 6 | ((v >> 6) & 1) << 7 |
				     ((v >> 3) & 7) << 1 | ((v >> 2) & 1) << 5;
			*t = pc + (uintptr_t)sext(d, 12);
			return K_CJ;
		}
		if (q == 1 && f3 >= 6) { /* c.beqz/c.bnez: imm[8|4:3] rs1' imm[7:6|2:1|5] */
			uint32_t d = ((v >> 12) & 1) << 8 | ((v >> 10) & 3) << 3 |
				     ((v >> 5) & 3) << 6 | ((v >> 3) & 3) << 1 |
				     ((v >> 2) & 1) << 5;
			*t = pc + (uintptr_t)sext(d, 9);
			return K_CBZ;
		}
		if (q == 2 && f3 == 4 && !((v >> 2) & 31)) { /* c.jr, c.jalr, c.ebreak */
			unsigned rs1 = (v >> 7) & 31;
			if (!((v >> 12) & 1))
				return rs1 ? K_STOP : K_BAD; /* c.jr x0: reserved */
			return rs1 ? K_ICALL : K_BRK;
		}
		return K_PLAIN;
	}
	if (len != 4)
		return K_BAD;
	switch (v & 0x7f) {
	case OP_AUIPC:
		*t = insn_auipc_value(pc, v);
		return K_AUIPC;
	case OP_JAL:
		*t = insn_jal_target(pc, v);
		return K_JAL;
	case OP_JALR:
		return insn_rd(v) ? K_ICALL : K_STOP;
	case 0x63: { /* branches: imm[12|10:5] rs2 rs1 f3 imm[4:1|11] */
		if (((v >> 12) & 7) == 2 || ((v >> 12) & 7) == 3)
			return K_BAD; /* reserved */
		uint32_t d = ((v >> 31) & 1) << 12 | ((v >> 25) & 0x3f) << 5 |
			     ((v >> 8) & 15) << 1 | ((v >> 7) & 1) << 11;
		*t = pc + (uintptr_t)sext(d, 13);
		return K_BRANCH;
	}
	case 0x73:
		return (v & ~0x100000u) == 0x73u && (v & 0x100000u) ? K_BRK : K_PLAIN;
	case 0x2f:
		return (v >> 27) == 2 ? K_LR : K_PLAIN; /* AMO funct5 00010: lr */
	default:
		return K_PLAIN;
	}
}

int arch_reloc_branches(const uint8_t *code, size_t len, uintptr_t addr,
			void (*fn)(uintptr_t target, uintptr_t from, void *ctx), void *ctx)
{
	for (size_t o = addr & 1; o + 2 <= len;) {
		uint16_t h;
		memcpy(&h, code + o, 2);
		int n = insn_len(h);
		if (!n || o + (size_t)n > len) { /* longer than 4 bytes: step over a halfword */
			o += 2;
			continue;
		}
		uintptr_t t;
		enum kind k = classify(get(code + o, n), n, addr + o, &t);
		if (k == K_JAL || k == K_BRANCH || k == K_CJ || k == K_CBZ)
			fn(t, addr + o, ctx);
		o += (size_t)n;
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
	return 8; /* a compressed instruction and a crossing 4-byte one, rounded */
}

/* The block being written. */
struct blk {
	uintptr_t dst;
	uint8_t *out;
	size_t n, cap;
};

static void put32(struct blk *b, uint32_t v)
{
	if (b->n + 4 <= b->cap)
		insn_put(b->out + b->n, v);
	b->n += 4;
}

static void put16(struct blk *b, uint32_t v)
{
	uint16_t h = (uint16_t)v;
	if (b->n + 2 <= b->cap)
		memcpy(b->out + b->n, &h, 2);
	b->n += 2;
}

/* rd = V from the next instruction's pc: auipc rd; addi rd, rd. The
 * caller checked the +-2 GiB. */
static void put_addr(struct blk *b, int rd, uintptr_t v)
{
	intptr_t d = (intptr_t)(v - (b->dst + b->n));
	int32_t hi = (int32_t)((d + 0x800) >> 12), lo = (int32_t)(d - ((intptr_t)hi << 12));
	put32(b, insn_auipc(rd, (uint32_t)hi));
	put32(b, ((uint32_t)lo & 0xfff) << 20 | (uint32_t)rd << 15 | (uint32_t)rd << 7 | 0x13u);
}

static int addr_ok(uintptr_t from, uintptr_t to)
{
	intptr_t d = (intptr_t)(to - from);
	return d >= -(intptr_t)0x80000000 + 0x800 && d < (intptr_t)0x80000000 - 0x800;
}

int arch_reloc_entry(uintptr_t src, const uint8_t *code, size_t avail, size_t fsize, uintptr_t dst,
		     uint8_t *out, size_t outcap, struct arch_reloc *r)
{
	memset(r, 0, sizeof(*r));
	if (!code || !out)
		return refuse(r, -EINVAL, "no code or no output buffer");
	if ((src | dst) & 1)
		return refuse(r, -EINVAL, "a misaligned function or block");
	if (src & 2)
		return refuse(r, -ENOTSUP,
			      "starts on a 2-byte boundary: no aligned word to replace by one "
			      "store (Ziccif)");
	if (fsize && avail < fsize)
		return refuse(r, -EINVAL, "%zu bytes given of a %zu-byte function", avail, fsize);
	size_t lim = fsize ? fsize : avail;
	uintptr_t back;

	/* The instructions the word covers. */
	struct {
		uint32_t v;
		int len;
		enum kind k;
		uintptr_t t;
	} in[2];
	size_t o = 0;
	int ni = 0;
	while (o < COVER) {
		if (o + 2 > lim)
			return refuse(r, fsize ? -ENOTSUP : -EINVAL,
				      "a %zu-byte function: its entry's word would overrun it",
				      lim);
		uint16_t h;
		memcpy(&h, code + o, 2);
		int n = insn_len(h);
		if (n && o + (size_t)n > lim)
			return refuse(r, fsize ? -ENOTSUP : -EINVAL,
				      "a %zu-byte function: its entry's word would overrun it",
				      lim);
		uint32_t v = n ? get(code + o, n) : h;
		enum kind k = classify(v, n, src + o, &in[ni].t);
		switch (k) {
		case K_BAD:
			return refuse(r, -ENOTSUP, "%s at +%zu",
				      n ? "an illegal or reserved instruction"
					: "an instruction longer than 4 bytes",
				      o);
		case K_BRK:
			return refuse(r, -ENOTSUP, "ebreak at +%zu: someone else's breakpoint", o);
		case K_LR:
			return refuse(r, -ENOTSUP,
				      "lr at +%zu: its sc would follow a jump (no forward progress "
				      "for LR/SC)",
				      o);
		default:
			break;
		}
		in[ni].v = v;
		in[ni].len = n;
		in[ni].k = k;
		o += (size_t)n;
		ni++;
		/* No fall-through before the word's end: its rest may be the next
		 * function, unless the size says it is this one's. */
		if (o < COVER && (k == K_STOP || k == K_CJ) && !fsize)
			return refuse(r, -ENOTSUP,
				      "returns or jumps away at +%zu, before 4 bytes: the rest may "
				      "be another function",
				      o - (size_t)n);
	}
	r->covered = (uint8_t)o;
	back = src + o;
	/* The entry's jal reaches the block (and whatever the caller puts up to
	 * 64 bytes before it), and the block the way back. */
	if (!insn_jal_ok(src, dst - 64) || !insn_jal_ok(src, dst + RELOC_MAX) ||
	    !insn_jal_ok(dst - 64, back) || !insn_jal_ok(dst + RELOC_MAX, back))
		return refuse(r, -ERANGE,
			      "the block is out of jal reach (+-1 MiB) of the entry: its jump is "
			      "one aligned word");

	/* Branches of the function into the covered bytes. */
	if (!fsize) {
		r->unscanned = 1;
	} else {
		for (size_t p = 0; p + 2 <= fsize;) {
			uint16_t h;
			memcpy(&h, code + p, 2);
			int n = insn_len(h);
			if (!n || p + (size_t)n > fsize) {
				p += 2;
				continue;
			}
			uintptr_t bt;
			enum kind bk = classify(get(code + p, n), n, src + p, &bt);
			if ((bk == K_JAL || bk == K_BRANCH || bk == K_CJ || bk == K_CBZ) &&
			    bt >= src && bt < back)
				return refuse(r, -ENOTSUP,
					      "a branch at +%#zx targets +%lu, the relocated "
					      "instructions (a loop head)",
					      p, (unsigned long)(bt - src));
			p += (size_t)n;
		}
	}

	struct blk b = {.dst = dst, .out = out, .cap = outcap};
	o = 0;
	for (int i = 0; i < ni; i++) {
		uint32_t v = in[i].v;
		uintptr_t t = in[i].t, pc = src + o;
		r->map[i].src = (uint8_t)o;
		r->map[i].dst = (uint8_t)b.n;
		o += (size_t)in[i].len;
		switch (in[i].k) {
		case K_AUIPC:
			if (!addr_ok(dst + b.n, t))
				return refuse(r, -ERANGE,
					      "auipc at +%lu: its value is out of the "
					      "block's +-2 GiB",
					      (unsigned long)(pc - src));
			if (insn_rd(v))
				put_addr(&b, insn_rd(v), t);
			continue;
		case K_JAL:
			if (insn_rd(v)) { /* the link: the original's return address */
				put_addr(&b, insn_rd(v), pc + 4);
				r->call_pushed = (uint8_t)b.n;
				r->call_target = t;
			}
			break;
		case K_CJ:
			break;
		case K_BRANCH: /* the inverse condition (funct3 ^ 1) over the jal: +8 */
			put32(&b, ((v & 0x01fff07fu) ^ 0x1000u) | 4u << 8);
			break;
		case K_CBZ: /* c.beqz rs1' -> bne rs1, x0, +8; c.bnez -> beq */
			put32(&b, (8u + ((v >> 7) & 7)) << 15 | ((v >> 13) & 1 ? 0u : 1u) << 12 |
				      4u << 8 | 0x63u);
			break;
		case K_ICALL: /* entries.c refuses it; the copy is exact */
			r->calls = 1;
			/* fall through */
		default:
			if (in[i].len == 2)
				put16(&b, v);
			else
				put32(&b, v);
			continue;
		}
		/* the jump to T, for jal, c.j and the branches */
		if (!insn_jal_ok(dst + b.n, t))
			return refuse(r, -ERANGE,
				      "the branch at +%lu targets %+ld, out of the block's jal "
				      "reach",
				      (unsigned long)(pc - src), (long)(t - src));
		put32(&b, insn_jal(RV_ZERO, dst + b.n, t));
	}
	r->ninsn = (uint8_t)ni;
	r->end = (uint8_t)b.n;
	put32(&b, insn_jal(RV_ZERO, dst + b.n, back));
	if (b.n > outcap)
		return refuse(r, -EINVAL, "the block takes %zu bytes, OUT holds %zu", b.n, outcap);
	r->len = (uint16_t)b.n;
	return 0;
}
