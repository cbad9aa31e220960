/* SPDX-License-Identifier: MIT */
/*
 * x86dec.h - x86-64 instruction lengths and the few fields the relocation
 * and the branch sweeps need, decoded by table: no operands, no text.
 */
#ifndef DYNFTRACE_ARCH_X86DEC_H
#define DYNFTRACE_ARCH_X86DEC_H

#include <stddef.h>
#include <stdint.h>

enum x86_enc {
	X86_LEGACY, /* legacy opcode maps: one byte, 0f, 0f38, 0f3a */
	X86_VEX,
	X86_EVEX,
	X86_XOP,
};

struct x86_dec {
	uint8_t len;	   /* bytes */
	uint8_t enc;	   /* enum x86_enc */
	uint8_t map;	   /* 0 one-byte, 1 0f, 2 0f38, 3 0f3a; VEX/EVEX/XOP: their map field */
	uint8_t op;	   /* the opcode byte within MAP */
	uint8_t op_off;	   /* its offset */
	uint8_t modrm;	   /* the ModRM byte, if has_modrm */
	uint8_t has_modrm; /* 1: a ModRM byte follows the opcode */
	uint8_t rex;	   /* the REX byte in effect, else 0 */
	uint8_t opsize;	   /* a 66 prefix */
	uint8_t addr32;	   /* a 67 prefix */
	uint8_t disp_off;  /* offset of a RIP-relative (EIP with addr32) disp32, else 0 */
	uint8_t imm_off;   /* offset of the immediate or relative operand, else 0 */
	uint8_t imm_len;   /* its size */
};

/*
 * Decode the instruction at P (AVAIL bytes readable) as 64-bit code into
 * IN: its length, or 0 when the bytes are not a valid instruction in
 * 64-bit mode or it runs past AVAIL.
 */
int x86_decode(const uint8_t *p, size_t avail, struct x86_dec *in);

#endif
