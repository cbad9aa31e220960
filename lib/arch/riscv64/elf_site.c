/* SPDX-License-Identifier: MIT */
/*
 * elf_site.c - riscv64 compiled sites, for the ELF reader (lib/core/elf.c),
 * in the runtime and in the command alike.
 *
 * -fpatchable-function-entry=4 (RVC: four c.nop) or =2 (two NOPs): 8 bytes
 * of NOPs at the function's entry; =8,4 or =4,2 (CALL_OPS) put 8 more
 * before the symbol, the ops literal, and the record points at them (the
 * reader then hands the function's start). The site is the second entry
 * word; the first is its marker, which becomes `auipc t0, hi`
 * (arch_site_prologue). A site already converted (auipc t0, then NOP, jal
 * or jalr) reads the same way.
 */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "elf.h"

#define RV_NOP	  0x00000013u
#define RV_C_NOP2 0x00010001u

static void riscv64_fix_site(const struct elf_image *img, struct elf_site *site, elf_read_fn read,
			     elf_func_start_fn func_start, const void *ctx)
{
	uint32_t w;
	(void)func_start;
	site->len = 4;
	if (read(img, ctx, site->addr, &w, sizeof(w)) != 0)
		return;
	if (w != RV_NOP && w != RV_C_NOP2 && (w & 0xfffu) != 0x297u /* auipc t0 */)
		return; /* not the compiler's NOPs: the runtime refuses it */
	site->addr += 4;
	site->marker = 4;
}

const struct elf_arch elf_arch_riscv64 = {EM_RISCV, riscv64_fix_site, 2, 0, -1};
