/* SPDX-License-Identifier: MIT */
/*
 * riscv64 static call trampoline (included by <dynftrace/static_call.h>).
 *
 * 24 bytes, uncompressed: +0 the patched instruction, always a `j`: to
 * the function, to +8 (the far path) or to +4 (no target); +4 ret; +8 the
 * far path, t1 loaded from the key's far slot (auipc/ld) and `jr t1`;
 * ebreak padding. Every form of the patched word is a jal x0 in one
 * aligned word, which a hart executing it sees whole. The runtime
 * (lib/arch/riscv64/arch.c) checks this layout before it patches.
 */
#ifndef DYNFTRACE_ARCH_RISCV64_STATIC_CALL_H
#define DYNFTRACE_ARCH_RISCV64_STATIC_CALL_H

/* A symbol's address as an asm operand: "i", printed with a plain %0
 * (riscv's gcc refuses %c for an address that is not a legitimate
 * constant address in PIC code). */
#ifndef DYNFTRACE_ARCH_SYM
#define DYNFTRACE_ARCH_SYM(x) "i"(x)
#define DYNFTRACE_ARCH_SYM0   "%0"
#endif

#define DYNFTRACE_SC_TRAMP_JMP_FAR "j .+8"
#define DYNFTRACE_SC_TRAMP_RET	   "j .+4"
#define DYNFTRACE_SC_TRAMP_ASM(name, first)                                                        \
	__asm__(".pushsection .text, \"ax\", %progbits\n\t"                                        \
		".option push\n\t"                                                                 \
		".option norvc\n\t"                                                                \
		".option norelax\n\t"                                                              \
		".balign 8\n\t"                                                                    \
		".globl __SCT__" #name "\n\t"                                                      \
		".protected __SCT__" #name "\n\t"                                                  \
		".type __SCT__" #name ", %function\n"                                              \
		"__SCT__" #name ":\n"                                                              \
		".Ldft_sct_" #name ":\n\t" first "\n\t"                                            \
		"ret\n"                                                                            \
		".Ldft_sctf_" #name ":\n\t"                                                        \
		"auipc t1, %pcrel_hi(__SCKL__" #name " + 8)\n\t"                                   \
		"ld t1, %pcrel_lo(.Ldft_sctf_" #name ")(t1)\n\t"                                   \
		"jr t1\n\t"                                                                        \
		"ebreak\n\t"                                                                       \
		".size __SCT__" #name ", 24\n\t"                                                   \
		".option pop\n\t"                                                                  \
		".pushsection dynftrace_scall, \"a\"\n\t"                                          \
		".balign 4\n\t"                                                                    \
		".long .Ldft_sct_" #name " - ., __SCKL__" #name " - .\n\t"                         \
		".popsection\n\t"                                                                  \
		".popsection")

#endif
