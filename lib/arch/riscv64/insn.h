/* SPDX-License-Identifier: MIT */
/* insn.h - riscv64 instruction encodings the patch engine writes and reads. */
#ifndef DYNFTRACE_ARCH_INSN_H
#define DYNFTRACE_ARCH_INSN_H

#include <stdint.h>
#include <string.h>

#define INSN_SIZE     4
#define RV_ZERO	      0
#define RV_RA	      1
#define RV_T0	      5
#define RV_T1	      6
#define INSN_NOP      0x00000013u /* addi x0, x0, 0 */
#define INSN_C_NOP2   0x00010001u /* two c.nop: what the compiler leaves with RVC */
#define INSN_EBREAK   0x00100073u /* the breakpoint protocol's */
#define INSN_RET      0x00008067u /* jalr x0, 0(ra) */
#define INSN_JR_T1    0x00030067u /* jalr x0, 0(t1) */
#define INSN_AUIPC_T1 0x00000317u /* auipc t1, 0 */
#define OP_AUIPC      0x17u
#define OP_JAL	      0x6fu
#define OP_JALR	      0x67u
#define OP_LUI	      0x37u
#define INSN_J_REACH  ((intptr_t)1 << 20) /* jal: +-1 MiB */

static inline uint32_t insn_get(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline void insn_put(void *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline int insn_rd(uint32_t v)
{
	return (int)((v >> 7) & 31);
}

/* ---- jal rd, off (J-type: imm[20|10:1|11|19:12]) ---- */
static inline int insn_jal_ok(uintptr_t from, uintptr_t to)
{
	intptr_t d = (intptr_t)(to - from);
	return !(d & 1) && d >= -INSN_J_REACH && d < INSN_J_REACH;
}
static inline uint32_t insn_jal(int rd, uintptr_t from, uintptr_t to)
{
	uint32_t d = (uint32_t)(to - from);
	return (((d >> 20) & 1) << 31) | (((d >> 1) & 0x3ff) << 21) | (((d >> 11) & 1) << 20) |
	       (((d >> 12) & 0xff) << 12) | (uint32_t)rd << 7 | OP_JAL;
}
static inline int insn_is_jal(uint32_t v)
{
	return (v & 0x7f) == OP_JAL;
}
static inline uintptr_t insn_jal_target(uintptr_t at, uint32_t v)
{
	uint32_t d = ((v >> 31) & 1) << 20 | ((v >> 21) & 0x3ff) << 1 | ((v >> 20) & 1) << 11 |
		     ((v >> 12) & 0xff) << 12;
	int32_t s = (int32_t)(d << 11) >> 11; /* sign-extend 21 bits */
	return at + (uintptr_t)(intptr_t)s;
}

/* ---- auipc rd, hi20 / jalr rd, lo12(rs1) ---- */
static inline uint32_t insn_auipc(int rd, uint32_t hi20)
{
	return (hi20 & 0xfffff) << 12 | (uint32_t)rd << 7 | OP_AUIPC;
}
static inline int insn_is_auipc(uint32_t v, int rd)
{
	return (v & 0x7f) == OP_AUIPC && insn_rd(v) == rd;
}
/* The value auipc V at AT leaves in its register. */
static inline uintptr_t insn_auipc_value(uintptr_t at, uint32_t v)
{
	return at + (uintptr_t)(intptr_t)(int32_t)(v & 0xfffff000u);
}
static inline uint32_t insn_jalr(int rd, int rs1, int32_t lo12)
{
	return ((uint32_t)lo12 & 0xfff) << 20 | (uint32_t)rs1 << 15 | (uint32_t)rd << 7 | OP_JALR;
}
static inline int insn_is_jalr(uint32_t v, int rs1)
{
	return (v & 0x707f) == OP_JALR && (int)((v >> 15) & 31) == rs1;
}
static inline int32_t insn_i_imm(uint32_t v)
{
	return (int32_t)v >> 20;
}
/* Can BASE + a 12-bit signed immediate name TO? */
static inline int insn_lo12_ok(uintptr_t base, uintptr_t to)
{
	intptr_t d = (intptr_t)(to - base);
	return d >= -2048 && d < 2048;
}

/* lui rd, hi20; addiw rd, rd, lo12: the 32-bit value V (V < 2^31). */
static inline void insn_li32(int rd, uint32_t v, uint32_t out[2])
{
	int32_t lo = (int32_t)(v << 20) >> 20;
	uint32_t hi = (v - (uint32_t)lo) >> 12;
	out[0] = (hi & 0xfffff) << 12 | (uint32_t)rd << 7 | OP_LUI;
	out[1] = ((uint32_t)lo & 0xfff) << 20 | (uint32_t)rd << 15 | (uint32_t)rd << 7 | 0x1bu;
}
#endif
