/* SPDX-License-Identifier: MIT */
/*
 * x86-64 static call trampoline (included by <dynftrace/static_call.h>).
 *
 * 16 bytes: +0 the patched instruction, `jmp func` (or `jmp +3` to the far
 * path, or `ret` and int3s for no target), int3 padding, +8 the far path
 * `jmp *far(%rip)` reading the key's far slot, int3 padding. The runtime
 * (lib/arch/x86_64/arch.c) checks this layout before it patches.
 */
#ifndef DYNFTRACE_ARCH_X86_64_STATIC_CALL_H
#define DYNFTRACE_ARCH_X86_64_STATIC_CALL_H

/* A symbol's address as an asm operand (as in static_key.h). */
#ifndef DYNFTRACE_ARCH_SYM
#define DYNFTRACE_ARCH_SYM(x) "i"(x)
#endif

/* The trampoline, in the defining object. FIRST is its initial instruction. */
#define DYNFTRACE_SC_TRAMP_JMP_FAR ".byte 0xe9, 0x03, 0x00, 0x00, 0x00"
#define DYNFTRACE_SC_TRAMP_RET	   ".byte 0xc3, 0xcc, 0xcc, 0xcc, 0xcc"
#define DYNFTRACE_SC_TRAMP_ASM(name, first)                                                        \
	__asm__(".pushsection .text, \"ax\", @progbits\n\t"                                        \
		".balign 16\n\t"                                                                   \
		".globl __SCT__" #name "\n\t"                                                      \
		".protected __SCT__" #name "\n\t"                                                  \
		".type __SCT__" #name ", @function\n"                                              \
		"__SCT__" #name ":\n"                                                              \
		".Ldft_sct_" #name ":\n\t" first "\n\t"                                            \
		".byte 0xcc, 0xcc, 0xcc\n\t"                                                       \
		".byte 0xff, 0x25\n\t"                                                             \
		".long __SCKL__" #name " + 8 - (. + 4)\n\t"                                        \
		".byte 0xcc, 0xcc\n\t"                                                             \
		".size __SCT__" #name ", 16\n\t"                                                   \
		".pushsection dynftrace_scall, \"a\"\n\t"                                          \
		".balign 4\n\t"                                                                    \
		".long .Ldft_sct_" #name " - ., __SCKL__" #name " - .\n\t"                         \
		".popsection\n\t"                                                                  \
		".popsection")

#endif
