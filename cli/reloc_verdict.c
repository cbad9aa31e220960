/* SPDX-License-Identifier: MIT */
/*
 * reloc_verdict.c - what `dynftrace sites --all` says of an entry that was
 * not built with a site: the relocator's verdict (lib/arch/<arch>/reloc.c,
 * linked into the command), on the whole function read from the file, as
 * the runtime would relocate it to a block near the code.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "elf.h"

/* The block's distance from the code in the verdict (the runtime places
 * blocks next to its trampoline region, near the object): within every
 * architecture's reach of the entry's jump (riscv64's jal: +-1 MiB). */
#define NEAR ((uintptr_t)1 << 19)
/* Longest function read whole for the branch scan. */
#define FUNC_MAX ((size_t)1 << 20)

const char *dft_reloc_entry_verdict(const struct elf_image *img, const struct elf_entry *e,
				    const unsigned char *code, size_t len)
{
	static char why[160];
	const char *base = strrchr(img->path, '/');
	base = base ? base + 1 : img->path;
	if (!strncmp(base, "ld-linux", 8) || !strncmp(base, "ld64.so", 7))
		return "refused: the dynamic loader's (the runtime runs on it)";
	unsigned char *whole = NULL;
	size_t fsize = 0;
	if (e->size && e->size <= FUNC_MAX && (whole = malloc(e->size)) &&
	    !elf_read_code(img, e->addr, whole, e->size)) {
		code = whole;
		len = fsize = e->size;
	}
	uint8_t out[256];
	struct arch_reloc r;
	int err = arch_reloc_entry((uintptr_t)e->addr, code, len, fsize, (uintptr_t)e->addr + NEAR,
				   out, sizeof(out), &r);
	free(whole);
	if (!err && r.calls)
		return "refused: an indirect call among its first instructions (its return "
		       "address would be the block's)";
	if (!err)
		return NULL;
	snprintf(why, sizeof(why), "refused: %s", r.why);
	return why;
}
