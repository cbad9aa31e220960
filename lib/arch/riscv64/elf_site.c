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

/* The compiler's 8 bytes of NOPs at a function's entry (two NOPs or four
 * c.nop); converted, `auipc t0` then a NOP, jal or jalr. */
static int riscv64_entry_site(const struct elf_image *img, uint64_t addr,
			      const struct elf_site *like, elf_read_fn read, const void *ctx,
			      struct elf_site *out)
{
	uint32_t w[2];
	(void)like;
	if (read(img, ctx, addr, w, sizeof(w)) != 0)
		return 0;
	int nops = (w[0] == RV_NOP || w[0] == RV_C_NOP2) && (w[1] == RV_NOP || w[1] == RV_C_NOP2);
	int conv = (w[0] & 0xfffu) == 0x297u &&
		   (w[1] == RV_NOP || w[1] == RV_C_NOP2 || (w[1] & 0x7fu) == 0x6fu /* jal */ ||
		    (w[1] & 0x707fu) == 0x67u /* jalr */);
	if (!nops && !conv)
		return 0;
	out->addr = addr + 4;
	out->marker = 4;
	out->len = 4;
	return 1;
}

const struct elf_arch elf_arch_riscv64 = {
    .machine = EM_RISCV,
    .fix_site = riscv64_fix_site,
    .entry_site = riscv64_entry_site,
    .cfa_reg = 2,
    .cfa_off = 0,
    .ra_saved = -1,
    .rel_relative = R_RISCV_RELATIVE,
    .rel_abs64 = R_RISCV_64,
};
