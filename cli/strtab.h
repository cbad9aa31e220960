/* SPDX-License-Identifier: MIT */
/*
 * strtab.h - strings interned to dense ids 0, 1, ... (copies kept), for the
 * views that aggregate or intern function names: the call-path tree
 * (calltree.h) and Perfetto's per-sequence name tables (dump_perfetto.c).
 * Open addressing on a power-of-two table kept at most half full.
 */
#ifndef DYNFTRACE_STRTAB_H
#define DYNFTRACE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab {
	char **str; /* by id */
	size_t n, cap;
	uint32_t *slot; /* id + 1, 0 empty */
	size_t nslot;
};

/* The id of S, added when new (*ADDED set then, if ADDED): >= 0, or
 * -ENOMEM. */
int64_t strtab_intern(struct strtab *t, const char *s, int *added);
void strtab_free(struct strtab *t);

#endif
