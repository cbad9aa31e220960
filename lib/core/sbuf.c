/* SPDX-License-Identifier: MIT */
/* sbuf.c - growable text buffers (sbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

void sb_put(struct sbuf *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 256;
		while (nc < b->len + n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = 0;
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		sb_put(b, tmp, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		b->oom = 1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb_put(b, big, (size_t)n);
	free(big);
}

void sb_free(struct sbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}
