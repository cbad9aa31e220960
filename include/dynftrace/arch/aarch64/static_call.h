/* SPDX-License-Identifier: MIT */
/*
 * aarch64 static call trampoline (included by <dynftrace/static_call.h>).
 *
 * 24 bytes: +0 the patched instruction, always a B: to the function, to +8
 * (the far path) or to +4 (no target); +4 ret; +8 the far path, x16 loaded
 * from the key's far slot (adrp/ldr) and `br x16`; brk padding. Every form
 * of the patched word is a B, which the architecture lets one store
 * replace while other threads run it. The runtime
 * (lib/arch/aarch64/arch.c) checks this layout before it patches.
 */
#ifndef DYNFTRACE_ARCH_AARCH64_STATIC_CALL_H
#define DYNFTRACE_ARCH_AARCH64_STATIC_CALL_H

/* A symbol's address as an asm operand (as in static_key.h). */
#ifndef DYNFTRACE_ARCH_SYM
#define DYNFTRACE_ARCH_SYM(x) "S"(x)
#endif

#define DYNFTRACE_SC_TRAMP_JMP_FAR "b .+8"
#define DYNFTRACE_SC_TRAMP_RET	   "b .+4"
#define DYNFTRACE_SC_TRAMP_ASM(name, first)                                                        \
	__asm__(".pushsection .text, \"ax\", %progbits\n\t"                                        \
		".balign 8\n\t"                                                                    \
		".globl __SCT__" #name "\n\t"                                                      \
		".protected __SCT__" #name "\n\t"                                                  \
		".type __SCT__" #name ", %function\n"                                              \
		"__SCT__" #name ":\n"                                                              \
		".Ldft_sct_" #name ":\n\t" first "\n\t"                                            \
		"ret\n\t"                                                                          \
		"adrp x16, __SCKL__" #name " + 8\n\t"                                              \
		"ldr x16, [x16, #:lo12:__SCKL__" #name " + 8]\n\t"                                 \
		"br x16\n\t"                                                                       \
		"brk #0xdf\n\t"                                                                    \
		".size __SCT__" #name ", 24\n\t"                                                   \
		".pushsection dynftrace_scall, \"a\"\n\t"                                          \
		".balign 4\n\t"                                                                    \
		".long .Ldft_sct_" #name " - ., __SCKL__" #name " - .\n\t"                         \
		".popsection\n\t"                                                                  \
		".popsection")

#endif
