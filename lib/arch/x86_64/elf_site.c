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

/* The absolute target of the fentry call at ADDR (its form in *FORM, its
 * length in *LEN), or 0 when no such call is there. */
static uint64_t fentry_target(const struct elf_image *img, elf_read_fn read, const void *ctx,
			      uint64_t addr, int *form, uint8_t *len)
{
	unsigned char b[6];
	int32_t d;

	if (read(img, ctx, addr, b, 5) != 0)
		return 0;
	if (b[0] == 0xe8) {
		memcpy(&d, b + 1, 4);
		*form = 1;
		*len = 5;
		return addr + 5 + (uint64_t)(int64_t)d;
	}
	if (!((b[0] == 0xff && b[1] == 0x15) || (b[0] == 0x67 && b[1] == 0xe8)) ||
	    read(img, ctx, addr, b, 6) != 0)
		return 0;
	memcpy(&d, b + 2, 4);
	*form = b[0];
	*len = 6;
	return addr + 6 + (uint64_t)(int64_t)d;
}

static int x86_64_entry_site(const struct elf_image *img, uint64_t addr,
			     const struct elf_site *like, elf_read_fn read, const void *ctx,
			     struct elf_site *out)
{
	static const unsigned char nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const unsigned char nops[5] = {0x90, 0x90, 0x90, 0x90, 0x90};
	unsigned char b[5];
	uint8_t marker = 0;

	if (read(img, ctx, addr, b, 4) == 0 && !memcmp(b, endbr64, 4)) {
		addr += 4;
		marker = 4;
	}
	if (read(img, ctx, addr, b, 5) != 0)
		return 0;
	out->addr = addr;
	out->marker = marker;
	out->len = 5;
	/* The NOPs: gcc's five, clang's or -mnop-mcount's nopl (the runtime's
	 * conversion leaves that too). */
	if (!memcmp(b, nops, 5) || !memcmp(b, nop5, 5))
		return 1;
	/* `call __fentry__`: the same call as the recorded site's. */
	int f1 = 0, f2 = 0;
	uint8_t l1 = 0, l2 = 0;
	uint64_t t1, t2;
	if (like->kind != SITE_FENTRY ||
	    !(t1 = fentry_target(img, read, ctx, like->addr, &f1, &l1)) ||
	    !(t2 = fentry_target(img, read, ctx, addr, &f2, &l2)) || f1 != f2 || t1 != t2)
		return 0;
	out->len = l2;
	return 1;
}

const struct elf_arch elf_arch_x86_64 = {
    .machine = EM_X86_64,
    .fix_site = x86_64_fix_site,
    .entry_site = x86_64_entry_site,
    .cfa_reg = 7,
    .cfa_off = 8,
    .ra_saved = 16,
    .rel_relative = R_X86_64_RELATIVE,
    .rel_abs64 = R_X86_64_64,
};
