/* SPDX-License-Identifier: MIT */
/*
 * aarch64 static branch (included by <dynftrace/static_key.h>): one
 * instruction, `b` to the branch's target when the flags say it is
 * compiled as the jump, else NOP. The runtime (lib/arch/aarch64/arch.c)
 * flips one into the other with a single aligned store, which the
 * architecture allows while other threads run it (B and NOP).
 */
#ifndef DYNFTRACE_ARCH_AARCH64_STATIC_KEY_H
#define DYNFTRACE_ARCH_AARCH64_STATIC_KEY_H

/* A symbol's address as an asm operand: "i" refuses it in PIC code on
 * aarch64, "S" (an absolute symbolic address) takes it. */
#ifndef DYNFTRACE_ARCH_SYM
#define DYNFTRACE_ARCH_SYM(x) "S"(x)
#endif

#define DYNFTRACE_ARCH_JUMP_INSN                                                                   \
	".if %c1 & 2\n\t"                                                                          \
	"b %l[dft_yes]\n\t"                                                                        \
	".else\n\t"                                                                                \
	"nop\n\t"                                                                                  \
	".endif\n\t"

#endif
