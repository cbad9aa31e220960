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

/* The compiler's pair at a function's entry: NOP NOP, after `bti c` if
 * any; converted, `mov x9, x30` then NOP or BL. */
static int aarch64_entry_site(const struct elf_image *img, uint64_t addr,
			      const struct elf_site *like, elf_read_fn read, const void *ctx,
			      struct elf_site *out)
{
	uint32_t w[3];
	(void)like;
	if (read(img, ctx, addr, w, 8) != 0)
		return 0;
	int bti = w[0] == A64_BTI_C || w[0] == A64_BTI_JC;
	if (bti && read(img, ctx, addr, w, 12) != 0)
		return 0;
	uint32_t first = w[bti], second = w[bti + 1];
	if (!(first == A64_NOP && second == A64_NOP) &&
	    !(first == A64_MOV_LR && (second == A64_NOP || (second & 0xfc000000u) == 0x94000000u)))
		return 0;
	out->addr = addr + 4 * (uint64_t)(bti + 1);
	out->marker = (uint8_t)(4 * (bti + 1));
	out->len = 4;
	return 1;
}

const struct elf_arch elf_arch_aarch64 = {
    .machine = EM_AARCH64,
    .fix_site = aarch64_fix_site,
    .entry_site = aarch64_entry_site,
    .cfa_reg = 31,
    .cfa_off = 0,
    .ra_saved = -1,
    .rel_relative = R_AARCH64_RELATIVE,
    .rel_abs64 = R_AARCH64_ABS64,
};
