/* SPDX-License-Identifier: MIT */
/*
 * elf_site.c - aarch64 compiled sites, for the ELF reader (lib/core/elf.c),
 * in the runtime and in the command alike.
 *
 * -fpatchable-function-entry=2[,0]: two NOPs at the function's entry
 * (after `bti c` when built with branch protection); =4,2 (CALL_OPS) adds
 * two NOPs before the symbol, the ops literal, and the record points at
 * them. The site is the second entry NOP; the first is its marker, which
 * becomes `mov x9, x30` (arch_site_prologue). A site already converted
 * (mov x9, x30 then NOP or BL) reads the same way.
 */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "elf.h"

#define A64_NOP	   0xd503201fu
#define A64_MOV_LR 0xaa1e03e9u
#define A64_BTI_C  0xd503245fu
#define A64_BTI_JC 0xd50324dfu

static void aarch64_fix_site(const struct elf_image *img, struct elf_site *site, elf_read_fn read,
			     elf_func_start_fn func_start, const void *ctx)
{
	uint32_t w[3];
	(void)func_start;
	site->len = 4;
	if (read(img, ctx, site->addr, w, sizeof(w)) != 0)
		return;
	int bti = w[0] == A64_BTI_C || w[0] == A64_BTI_JC;
	uint32_t first = w[bti];
	if (first != A64_NOP && first != A64_MOV_LR)
		return; /* not the compiler's pair: the runtime refuses it */
	site->addr += 4 * (uint64_t)(bti + 1);
	site->marker = (uint8_t)(4 * (bti + 1));
}

const struct elf_arch elf_arch_aarch64 = {EM_AARCH64, aarch64_fix_site, 31, 0, -1};
