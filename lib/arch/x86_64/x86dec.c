/* SPDX-License-Identifier: MIT */
/*
 * x86dec.c - x86-64 instruction lengths by table (x86dec.h).
 *
 * The branch sweeps decode every instruction of the code they relocate in
 * (entries.c's sweep of other functions' branches, the self-scan of each
 * relocated function), megabytes per library: a general disassembler spends
 * most of its time formatting text nobody reads. The length of an x86-64
 * instruction follows from its prefixes, its opcode map and opcode (does a
 * ModRM follow, which immediate), the ModRM and SIB (which displacement)
 * and the operand- and address-size prefixes; that is all this does.
 *
 * What 64-bit mode changes from the older modes, and is followed here: the
 * opcodes of inc/dec r (40-4f) are REX; those invalid in 64-bit mode (push/
 * pop of segment registers, BCD, bound, far call/jmp with an immediate,
 * arpl) decode as invalid; c4/c5 are always VEX and 62 always EVEX; 8f with
 * a ModRM reg field not 0 is XOP; addressing is 32- or 64-bit only (a 67
 * prefix keeps the ModRM/SIB forms), and mod 0 rm 5 is RIP-relative (EIP
 * with 67). A 66 prefix gives near branches a 16-bit displacement, as AMD
 * decodes them (and objdump, and capstone; Intel ignores the prefix there):
 * no compiler emits one, and the relocation refuses them. Legacy prefixes
 * or REX before VEX and EVEX make the instruction undefined; they are
 * decoded as prefixes all the same, as the disassemblers do.
 */
#include <string.h>

#include "x86dec.h"

#define INSN_MAX 15

enum {
	M = 1 << 0,    /* a ModRM byte follows */
	I8 = 1 << 1,   /* imm8 (or rel8) */
	I16 = 1 << 2,  /* imm16 */
	IZ = 1 << 3,   /* imm16 with 66, else imm32 */
	BAD = 1 << 4,  /* invalid in 64-bit mode */
	SP = 1 << 5,   /* special: see x86_decode */
	NOMOD = 1 << 6 /* ModRM whose mod is ignored (mov cr/dr): no SIB, no disp */
};

/* The one-byte map. Prefixes, REX and the escapes (0f, c4, c5, 62) are SP
 * and handled before the table; 8f (pop or XOP), a0-a3 (moffs), b8-bf
 * (imm64 with REX.W) and f6/f7 (test's immediate) are SP too. */
/* clang-format off */
static const uint8_t map0[256] = {
    [0x00 ... 0x03] = M, [0x04] = I8, [0x05] = IZ, [0x06 ... 0x07] = BAD,
    [0x08 ... 0x0b] = M, [0x0c] = I8, [0x0d] = IZ, [0x0e] = BAD, [0x0f] = SP,
    [0x10 ... 0x13] = M, [0x14] = I8, [0x15] = IZ, [0x16 ... 0x17] = BAD,
    [0x18 ... 0x1b] = M, [0x1c] = I8, [0x1d] = IZ, [0x1e ... 0x1f] = BAD,
    [0x20 ... 0x23] = M, [0x24] = I8, [0x25] = IZ, [0x26] = SP, [0x27] = BAD,
    [0x28 ... 0x2b] = M, [0x2c] = I8, [0x2d] = IZ, [0x2e] = SP, [0x2f] = BAD,
    [0x30 ... 0x33] = M, [0x34] = I8, [0x35] = IZ, [0x36] = SP, [0x37] = BAD,
    [0x38 ... 0x3b] = M, [0x3c] = I8, [0x3d] = IZ, [0x3e] = SP, [0x3f] = BAD,
    [0x40 ... 0x4f] = SP, /* REX */
    [0x50 ... 0x5f] = 0,
    [0x60 ... 0x61] = BAD, [0x62] = SP, [0x63] = M, [0x64 ... 0x67] = SP,
    [0x68] = IZ, [0x69] = M | IZ, [0x6a] = I8, [0x6b] = M | I8, [0x6c ... 0x6f] = 0,
    [0x70 ... 0x7f] = I8,
    [0x80] = M | I8, [0x81] = M | IZ, [0x82] = BAD, [0x83] = M | I8,
    [0x84 ... 0x8e] = M, [0x8f] = SP,
    [0x90 ... 0x99] = 0, [0x9a] = BAD, [0x9b ... 0x9f] = 0,
    [0xa0 ... 0xa3] = SP, [0xa4 ... 0xa7] = 0, [0xa8] = I8, [0xa9] = IZ, [0xaa ... 0xaf] = 0,
    [0xb0 ... 0xb7] = I8, [0xb8 ... 0xbf] = SP,
    [0xc0 ... 0xc1] = M | I8, [0xc2] = I16, [0xc3] = 0, [0xc4 ... 0xc5] = SP,
    [0xc6] = M | I8, [0xc7] = M | IZ, [0xc8] = I16 | I8, [0xc9] = 0, [0xca] = I16,
    [0xcb ... 0xcc] = 0, [0xcd] = I8, [0xce] = BAD, [0xcf] = 0,
    [0xd0 ... 0xd3] = M, [0xd4 ... 0xd6] = BAD, [0xd7] = 0, [0xd8 ... 0xdf] = M,
    [0xe0 ... 0xe7] = I8, [0xe8 ... 0xe9] = IZ, [0xea] = BAD, [0xeb] = I8, [0xec ... 0xef] = 0,
    [0xf0] = SP, [0xf1] = 0, [0xf2 ... 0xf3] = SP, [0xf4 ... 0xf5] = 0, [0xf6 ... 0xf7] = SP,
    [0xf8 ... 0xfd] = 0, [0xfe ... 0xff] = M,
};

/* The 0f map; 0f 38 and 0f 3a are SP (three-byte maps), 0f 78 is SP (AMD's
 * extrq/insertq take two imm8 with 66 or f2). */
static const uint8_t map1[256] = {
    [0x00 ... 0x03] = M, [0x04] = BAD, [0x05 ... 0x09] = 0, [0x0a] = BAD, [0x0b] = 0,
    [0x0c] = BAD, [0x0d] = M, [0x0e] = 0, [0x0f] = M | I8, /* 3DNow! */
    [0x10 ... 0x1f] = M,
    [0x20 ... 0x23] = M | NOMOD, [0x24 ... 0x27] = BAD, [0x28 ... 0x2f] = M,
    [0x30 ... 0x35] = 0, [0x36] = BAD, [0x37] = 0, [0x38] = SP, [0x39] = BAD, [0x3a] = SP,
    [0x3b ... 0x3f] = BAD,
    [0x40 ... 0x6f] = M,
    [0x70 ... 0x73] = M | I8, [0x74 ... 0x76] = M, [0x77] = 0, [0x78] = SP, [0x79] = M,
    [0x7a ... 0x7b] = BAD, [0x7c ... 0x7f] = M,
    [0x80 ... 0x8f] = IZ,
    [0x90 ... 0x9f] = M,
    [0xa0 ... 0xa2] = 0, [0xa3] = M, [0xa4] = M | I8, [0xa5] = M, [0xa6 ... 0xa7] = M, /* PadLock */
    [0xa8 ... 0xaa] = 0, [0xab] = M, [0xac] = M | I8, [0xad ... 0xaf] = M,
    [0xb0 ... 0xb9] = M, [0xba] = M | I8, [0xbb ... 0xbf] = M,
    [0xc0 ... 0xc1] = M, [0xc2] = M | I8, [0xc3] = M, [0xc4 ... 0xc6] = M | I8, [0xc7] = M,
    [0xc8 ... 0xcf] = 0,
    [0xd0 ... 0xff] = M,
};
/* clang-format on */

/* VEX and EVEX map 1 opcodes with an imm8 (shifts by immediate, pshuf*,
 * cmpps, pinsrw, pextrw, shufps); map 3 always has one. */
static int vex_imm8(unsigned map, unsigned op)
{
	return map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 ||
					 (op >= 0xc4 && op <= 0xc6)));
}

/* The ModRM at P[I] and what follows it: SIB and displacement. Returns the
 * offset past them, or 0 past AVAIL. */
static inline __attribute__((always_inline)) size_t
modrm_tail(const uint8_t *p, size_t i, size_t avail, int nomod, struct x86_dec *in)
{
	if (i >= avail)
		return 0;
	uint8_t m = p[i++], mod = m >> 6, rm = m & 7;
	in->modrm = m;
	in->has_modrm = 1;
	if (mod == 3 || nomod)
		return i;
	if (rm == 4) {
		if (i >= avail)
			return 0;
		uint8_t sib = p[i++];
		if (mod == 0 && (sib & 7) == 5)
			return i + 4; /* disp32, no base */
	} else if (mod == 0 && rm == 5) {
		in->disp_off = (uint8_t)i; /* RIP-relative */
		return i + 4;
	}
	return i + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

static inline int finish(size_t n, size_t avail, struct x86_dec *in)
{
	if (!n || n > INSN_MAX || n > avail)
		return 0;
	in->len = (uint8_t)n;
	return (int)n;
}

/* VEX (c4, c5), EVEX (62) or XOP (8f) at P[I]. */
static int decode_vex(const uint8_t *p, size_t i, size_t avail, struct x86_dec *in)
{
	uint8_t b = p[i];
	unsigned map, pl; /* the prefix's payload after its first byte */

	if (i + 1 >= avail)
		return 0;
	if (b == 0xc5) {
		in->enc = X86_VEX, map = 1, pl = 1;
	} else if (b == 0xc4) {
		in->enc = X86_VEX, map = p[i + 1] & 0x1f, pl = 2;
		if (map < 1 || map > 3)
			return 0;
	} else if (b == 0x62) {
		in->enc = X86_EVEX, map = p[i + 1] & 7, pl = 3;
		if (map == 0 || map == 4 || map == 7)
			return 0;
	} else {
		in->enc = X86_XOP, map = p[i + 1] & 0x1f, pl = 2;
		if (map < 8 || map > 10)
			return 0;
	}
	i += 1 + pl;
	if (i >= avail)
		return 0;
	in->map = (uint8_t)map;
	in->op = p[i];
	in->op_off = (uint8_t)i++;
	if (in->enc == X86_VEX && map == 1 && in->op == 0x77)
		return finish(i, avail, in); /* vzeroupper, vzeroall: no ModRM */
	size_t n = modrm_tail(p, i, avail, 0, in);
	if (!n)
		return 0;
	unsigned imm = 0;
	if (in->enc == X86_XOP)
		imm = map == 8 ? 1 : map == 10 ? 4 : 0;
	else if (vex_imm8(map, in->op))
		imm = 1;
	if (imm)
		in->imm_off = (uint8_t)n, in->imm_len = (uint8_t)imm;
	return finish(n + imm, avail, in);
}

int x86_decode(const uint8_t *p, size_t avail, struct x86_dec *in)
{
	size_t i = 0;
	int f66 = 0, f2 = 0; /* 66; f2 or f3 */

	memset(in, 0, sizeof(*in));
	if (avail > INSN_MAX)
		avail = INSN_MAX;
	/* Legacy prefixes and REX: a REX counts only right before the opcode. */
	for (;; i++) {
		if (i >= avail)
			return 0;
		uint8_t b = p[i];
		if (!(map0[b] & SP))
			break; /* most instructions: an opcode at once */
		if ((b & 0xf0) == 0x40) {
			in->rex = b;
			continue;
		}
		if (b == 0x66)
			f66 = 1;
		else if (b == 0x67)
			in->addr32 = 1;
		else if (b == 0xf2 || b == 0xf3)
			f2 = 1;
		else if (b != 0xf0 && b != 0x26 && b != 0x2e && b != 0x36 && b != 0x3e &&
			 b != 0x64 && b != 0x65)
			break;
		in->rex = 0;
	}
	in->opsize = (uint8_t)f66;
	uint8_t b = p[i];
	if (b == 0xc4 || b == 0xc5 || b == 0x62 ||
	    (b == 0x8f && i + 1 < avail && (p[i + 1] & 0x38))) {
		return decode_vex(p, i, avail, in);
	}

	unsigned f, map = 0;
	if (b != 0x0f) {
		f = map0[b];
	} else {
		if (++i >= avail)
			return 0;
		b = p[i];
		if (b == 0x38 || b == 0x3a) {
			map = b == 0x38 ? 2 : 3;
			if (++i >= avail)
				return 0;
			b = p[i];
			f = M | (map == 3 ? I8 : 0);
		} else {
			map = 1;
			f = map1[b];
		}
	}
	in->map = (uint8_t)map;
	in->op = b;
	in->op_off = (uint8_t)i++;
	if (f & BAD)
		return 0;

	int w = in->rex & 8;
	unsigned imm = 0;
	if (f & SP) {
		if (map == 1) { /* 0f 78: vmread, or extrq/insertq ib ib */
			f = M;
			imm = f66 || f2 ? 2 : 0;
		} else if (b == 0x8f) {
			f = M; /* pop r/m */
		} else if (b >= 0xa0 && b <= 0xa3) {
			f = 0, imm = in->addr32 ? 4 : 8; /* moffs */
		} else if (b >= 0xb8 && b <= 0xbf) {
			f = 0, imm = w ? 8 : f66 ? 2 : 4;
		} else if (b == 0xf6 || b == 0xf7) {
			if (i >= avail)
				return 0;
			f = M;
			if (((p[i] >> 3) & 7) < 2) /* test r/m, imm */
				f |= b == 0xf6 ? I8 : IZ;
		} else {
			return 0; /* a prefix where the opcode was expected cannot be */
		}
	}
	size_t n = i;
	if (f & M) {
		n = modrm_tail(p, i, avail, (f & NOMOD) != 0, in);
		if (!n)
			return 0;
	}
	if (f & I8)
		imm += 1;
	if (f & I16)
		imm += 2;
	if (f & IZ)
		imm += f66 && !w ? 2 : 4;
	if (imm)
		in->imm_off = (uint8_t)n, in->imm_len = (uint8_t)imm;
	return finish(n + imm, avail, in);
}
