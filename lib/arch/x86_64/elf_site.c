/* SPDX-License-Identifier: MIT */
/*
 * elf_site.c - x86-64 compiled sites, for the ELF reader (lib/core/elf.c), in
 * the runtime and in the command alike.
 *
 *  - -fpatchable-function-entry=N[,M]: five 1-byte NOPs (gcc) or one nopl
 *    (clang). With -fcf-protection the function starts with endbr64: when
 *    the site was put at the symbol (M > 0, prefix pad), the NOPs follow the
 *    endbr64; with M == 0 the compilers already point the record past it.
 *  - -pg -mfentry -mrecord-mcount: `call __fentry__` (e8 rel32, 5 bytes), in
 *    PIE code `call *__fentry__@GOTPCREL(%rip)` (ff 15, 6 bytes) or its
 *    relaxed form `addr32 call` (67 e8, 6 bytes); -mnop-mcount: a nop5.
 */
#include <elf.h>
#include <string.h>

#include "elf.h"

static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

static void x86_64_fix_site(const struct elf_image *img, struct elf_site *site, elf_read_fn read,
			    elf_func_start_fn func_start, const void *ctx)
{
	unsigned char b[4];

	if (read(img, ctx, site->addr, b, 4) == 0 && !memcmp(b, endbr64, 4)) {
		/* Prefix-pad case: the site was put at the symbol, which starts
		 * with the endbr64; the NOPs follow it. */
		site->addr += 4;
		site->marker = 4;
	} else if (site->addr >= 4 && read(img, ctx, site->addr - 4, b, 4) == 0 &&
		   !memcmp(b, endbr64, 4)) {
		/* The compiler pointed the record past the endbr64. Only trust
		 * the bytes when they are the function's first ones. */
		site->marker = func_start(img, site->addr - 4) ? 4 : 0;
	}

	site->len = 5;
	if (read(img, ctx, site->addr, b, 2) == 0 &&
	    ((b[0] == 0xff && b[1] == 0x15) || (b[0] == 0x67 && b[1] == 0xe8)))
		site->len = 6; /* call *__fentry__@GOTPCREL(%rip), or relaxed */
}

const struct elf_arch elf_arch_x86_64 = {EM_X86_64, x86_64_fix_site, 7, 8, 16};
