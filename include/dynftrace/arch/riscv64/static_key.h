/* SPDX-License-Identifier: MIT */
/*
 * riscv64 static branch (included by <dynftrace/static_key.h>): one 4-byte
 * instruction, `j` to the branch's target when the flags say it is
 * compiled as the jump, else NOP, on a 4-byte boundary (the label 1 the
 * record names is redefined after the alignment), never compressed. The
 * runtime (lib/arch/riscv64/arch.c) flips one into the other with a single
 * aligned store, which a hart executing it sees whole.
 */
#ifndef DYNFTRACE_ARCH_RISCV64_STATIC_KEY_H
#define DYNFTRACE_ARCH_RISCV64_STATIC_KEY_H

/* A symbol's address as an asm operand (%c prints it). */
/* A symbol's address as an asm operand: "i", printed with a plain %0
 * (riscv's gcc refuses %c for an address that is not a legitimate
 * constant address in PIC code). */
#ifndef DYNFTRACE_ARCH_SYM
#define DYNFTRACE_ARCH_SYM(x) "i"(x)
#define DYNFTRACE_ARCH_SYM0   "%0"
#endif

#define DYNFTRACE_ARCH_JUMP_INSN                                                                   \
	".option push\n\t"                                                                         \
	".option norvc\n\t"                                                                        \
	".balign 4\n"                                                                              \
	"1:\n\t"                                                                                   \
	".if %c1 & 2\n\t"                                                                          \
	"j %l[dft_yes]\n\t"                                                                        \
	".else\n\t"                                                                                \
	"nop\n\t"                                                                                  \
	".endif\n\t"                                                                               \
	".option pop\n\t"

#endif
