/* SPDX-License-Identifier: MIT */
/*
 * sbuf.h - a growable text buffer, for the text the control files and the
 * tracers' control setters produce. Owned by one thread at a time. On
 * allocation failure it keeps what it has and sets oom; writers never fail.
 */
#ifndef DYNFTRACE_SBUF_H
#define DYNFTRACE_SBUF_H

#include <stddef.h>

#include "internal.h"

struct sbuf {
	char *p;
	size_t len, cap;
	int oom;
};
void sb_put(struct sbuf *b, const void *p, size_t n) HIDDEN;
void sb_printf(struct sbuf *b, const char *fmt, ...) HIDDEN __attribute__((format(printf, 2, 3)));
void sb_free(struct sbuf *b) HIDDEN;

#endif
