/* SPDX-License-Identifier: MIT */
/*
 * x86-64 static branch (included by <dynftrace/static_key.h>): a 5-byte
 * instruction, `jmp rel32` to the branch's target when the flags say it is
 * compiled as the jump, else the canonical 5-byte NOP. The runtime
 * (lib/arch/x86_64/arch.c) flips one into the other.
 */
#ifndef DYNFTRACE_ARCH_X86_64_STATIC_KEY_H
#define DYNFTRACE_ARCH_X86_64_STATIC_KEY_H

/* A symbol's address as an asm operand (%c prints it). */
#ifndef DYNFTRACE_ARCH_SYM
#define DYNFTRACE_ARCH_SYM(x) "i"(x)
#endif

#define DYNFTRACE_ARCH_JUMP_INSN                                                                   \
	".if %c1 & 2\n\t"                                                                          \
	".byte 0xe9\n\t.long %l[dft_yes] - (1b + 5)\n\t"                                           \
	".else\n\t"                                                                                \
	".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                                                   \
	".endif\n\t"

#endif
