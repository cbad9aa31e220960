/* SPDX-License-Identifier: MIT */
/* insn.h - x86-64 instruction encodings the patch engine writes and reads. */
#ifndef DYNFTRACE_ARCH_INSN_H
#define DYNFTRACE_ARCH_INSN_H

#include <stdint.h>
#include <string.h>

#define INSN_SIZE 5 /* every patchable instruction: call/jmp rel32, nop5 */
#define INSN_INT3 0xcc
#define INSN_CALL 0xe8
#define INSN_JMP  0xe9
#define INSN_RET  0xc3

/* The canonical 5-byte NOP every site becomes. */
static const uint8_t insn_nop5[INSN_SIZE] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

static inline int insn_rel32_ok(uintptr_t from, uintptr_t to)
{
	intptr_t d = (intptr_t)to - (intptr_t)(from + INSN_SIZE);
	return d == (intptr_t)(int32_t)d;
}

/* Encode `call/jmp TO` at FROM. Caller checked insn_rel32_ok. */
static inline void insn_make_rel32(uint8_t op, uintptr_t from, uintptr_t to, uint8_t out[INSN_SIZE])
{
	int32_t d = (int32_t)((intptr_t)to - (intptr_t)(from + INSN_SIZE));
	out[0] = op;
	memcpy(out + 1, &d, 4);
}

static inline uintptr_t insn_rel32_target(uintptr_t at, const uint8_t *insn)
{
	int32_t d;
	memcpy(&d, insn + 1, 4);
	return at + INSN_SIZE + (intptr_t)d;
}

/*
 * Length of the NOP instruction at P (at most AVAIL bytes), or 0 if P does
 * not start one of the NOP forms compilers emit at patchable entries.
 */
static inline int insn_nop_len(const uint8_t *p, int avail)
{
	int pre = 0;
	while (pre < avail && p[pre] == 0x66) /* operand-size prefixes */
		pre++;
	p += pre;
	avail -= pre;
	if (avail >= 1 && p[0] == 0x90)
		return pre + 1;
	if (avail >= 3 && p[0] == 0x0f && p[1] == 0x1f) {
		uint8_t modrm = p[2], mod = modrm >> 6, rm = modrm & 7;
		int len = 3;
		if (((modrm >> 3) & 7) != 0)
			return 0; /* only nopl /0 */
		if (mod != 3 && rm == 4)
			len++; /* SIB */
		if (mod == 1)
			len += 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			len += 4;
		return len <= avail ? pre + len : 0;
	}
	return 0;
}

/* Do the N bytes at P consist of NOPs only (gcc: 90 x5, clang: 0f 1f 44 00 08)? */
static inline int insn_is_nops(const uint8_t *p, int n)
{
	int off = 0;
	while (off < n) {
		int l = insn_nop_len(p + off, n - off);
		if (l <= 0)
			return 0;
		off += l;
	}
	return 1;
}
#endif
