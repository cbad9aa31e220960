/* SPDX-License-Identifier: MIT */
/* insn.h - aarch64 instruction encodings the patch engine writes and reads. */
#ifndef DYNFTRACE_ARCH_INSN_H
#define DYNFTRACE_ARCH_INSN_H

#include <stdint.h>
#include <string.h>

#define INSN_SIZE      4
#define INSN_NOP       0xd503201fu
#define INSN_BRK       0xd4201be0u /* brk #0xdf: the breakpoint protocol's */
#define INSN_MOV_X9LR  0xaa1e03e9u /* mov x9, x30 (orr x9, xzr, x30) */
#define INSN_BTI_C     0xd503245fu
#define INSN_BTI_JC    0xd50324dfu
#define INSN_PACIASP   0xd503233fu
#define INSN_RET       0xd65f03c0u
#define INSN_B	       0x14000000u
#define INSN_BL	       0x94000000u
#define INSN_B_MASK    0xfc000000u
#define INSN_BR_X16    0xd61f0200u
#define INSN_LDR_X16_8 0x58000050u	   /* ldr x16, .+8 */
#define INSN_B_REACH   ((intptr_t)1 << 27) /* B/BL: +-128 MiB */

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

static inline int insn_b_ok(uintptr_t from, uintptr_t to)
{
	intptr_t d = (intptr_t)(to - from);
	return !(d & 3) && d >= -INSN_B_REACH && d < INSN_B_REACH;
}

/* B or BL (OP) from FROM to TO; the caller checked insn_b_ok. */
static inline uint32_t insn_b(uint32_t op, uintptr_t from, uintptr_t to)
{
	intptr_t d = (intptr_t)(to - from);
	return op | ((uint32_t)(d >> 2) & 0x03ffffffu);
}

static inline int insn_is_b(uint32_t v)
{
	return (v & INSN_B_MASK) == INSN_B || (v & INSN_B_MASK) == INSN_BL;
}

static inline uintptr_t insn_b_target(uintptr_t at, uint32_t v)
{
	int32_t imm = (int32_t)(v << 6) >> 6; /* sign-extend 26 bits */
	return at + (uintptr_t)((intptr_t)imm * 4);
}

/* movz/movk xD, #imm16, lsl SHIFT */
static inline uint32_t insn_movz(int rd, uint32_t imm16)
{
	return 0xd2800000u | (imm16 & 0xffff) << 5 | (uint32_t)rd;
}
static inline uint32_t insn_movk16(int rd, uint32_t imm16)
{
	return 0xf2a00000u | (imm16 & 0xffff) << 5 | (uint32_t)rd;
}
#endif
