// SPDX-License-Identifier: MIT
/*
 * fuzz_elf.c - libFuzzer harness for elf_load() on files (mem == 0), and
 * elf_load_entries() after it (symbols, .eh_frame, .eh_frame_hdr).
 *
 *   clang -fsanitize=fuzzer,address,undefined -Iinclude -iquote lib/core \
 *	tests/fuzz/fuzz_elf.c lib/core/elf.c lib/arch/x86_64/elf_site.c -o fuzz_elf
 *
 * elf_load() reads a path, so each input is written to one temporary file
 * (created once, rewritten in place) and loaded from there.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf.h"

static char path[64];
static int fd = -1;

static void cleanup(void)
{
	if (fd >= 0)
		unlink(path);
}

/* Entries: sorted, unique, named, in an executable segment, findable. */
static void check_entries(const struct elf_image *img)
{
	for (size_t i = 0; i < img->nentries; i++) {
		const struct elf_entry *e = &img->entries[i];
		const char *name = elf_entry_name(img, e);
		int exec = 0;

		if (i && img->entries[i - 1].addr >= e->addr)
			abort();
		if (e->src < ENTRY_SYMTAB || e->src > ENTRY_FDE || !name || !*name)
			abort();
		if (e->site >= 0 && (size_t)e->site >= img->nsites)
			abort();
		if (elf_entry_find(img, e->addr) != (ptrdiff_t)i)
			abort();
		for (size_t j = 0; j < img->nsegs; j++)
			if ((img->segs[j].flags & 1) && e->addr >= img->segs[j].vaddr &&
			    e->addr - img->segs[j].vaddr < img->segs[j].memsz)
				exec = 1;
		if (!exec)
			abort();
	}
	if (!memchr(img->err, 0, sizeof(img->err)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image img;
	size_t done = 0;

	if (fd < 0) {
		const char *dir = getenv("TMPDIR");

		snprintf(path, sizeof(path), "%s/fuzz_elf.XXXXXX", dir && *dir ? dir : "/tmp");
		fd = mkstemp(path);
		if (fd < 0)
			abort();
		atexit(cleanup);
	}
	if (ftruncate(fd, 0) < 0)
		abort();
	while (done < size) {
		ssize_t n = pwrite(fd, data + done, size - done, done);

		if (n <= 0)
			abort();
		done += n;
	}
	if (elf_load(&img, path, 0, 0) == 0) {
		/* Walk the results as a user would: they must be consistent. */
		for (size_t i = 0; i < img.nsites; i++) {
			const struct elf_site *s = &img.sites[i];

			if (s->func >= 0 && (size_t)s->func >= img.nfuncs)
				abort();
			if (elf_func_lookup(&img, s->addr) != s->func)
				abort();
			if (s->func >= 0 && !elf_func_name(&img, s->func))
				abort();
			if (i && img.sites[i - 1].addr >= s->addr)
				abort();
		}
		if (elf_load_entries(&img) == 0)
			check_entries(&img);
		else if (!img.err[0])
			abort();
	} else if (!img.err[0] || !memchr(img.err, 0, sizeof(img.err))) {
		abort(); /* every failure explains itself */
	}
	elf_free(&img);
	return 0;
}
