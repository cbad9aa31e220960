/* SPDX-License-Identifier: MIT */
/*
 * reloc.c - entry relocation (functions built without a site, -P) is
 * x86-64 only: on riscv64 every request is refused with the reason, and the
 * entries are listed as refused in the session (entries.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

int arch_reloc_entry(uintptr_t src, const uint8_t *code, size_t avail, size_t fsize, uintptr_t dst,
		     uint8_t *out, size_t outcap, struct arch_reloc *r)
{
	(void)src, (void)code, (void)avail, (void)fsize, (void)dst, (void)out, (void)outcap;
	memset(r, 0, sizeof(*r));
	snprintf(r->why, sizeof(r->why), "entry relocation (-P) is implemented on x86-64 only");
	return -ENOTSUP;
}

size_t arch_reloc_max(void)
{
	return 64;
}

size_t arch_reloc_peek(void)
{
	return 16;
}

int arch_reloc_branches(const uint8_t *code, size_t len, uintptr_t addr,
			void (*fn)(uintptr_t target, uintptr_t from, void *ctx), void *ctx)
{
	(void)code, (void)len, (void)addr, (void)fn, (void)ctx;
	return -ENOENT;
}

void arch_reloc_unload(int (*close_lib)(void *))
{
	(void)close_lib;
}
