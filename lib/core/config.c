/* SPDX-License-Identifier: MIT */
/*
 * config.c - where the runtime's settings come from.
 *
 * A process started under dynftrace (record, a preload, a linked program)
 * is configured by its environment: DYNFTRACE_* and XDG_RUNTIME_DIR. A
 * process the runtime was injected into (`dynftrace attach`) keeps the
 * environment it was started with, which says nothing of us and which we
 * must not change (setenv races the program's own getenv calls), so the
 * attach passes the same settings as a block of NAME=VALUE strings that
 * replaces the environment for every name the runtime reads.
 *
 * | state     | written by                        | read by                 |
 * |-----------|-----------------------------------|-------------------------|
 * | overlay   | dft_config_set, once per attach,  | dft_getenv, after the   |
 * |           | before anything that reads it     | attach's release store  |
 * |           | starts (control thread, tracers)  |                         |
 *
 * The block is never freed while the runtime is loaded: strings returned by
 * dft_getenv live as long as the environment's would.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *overlay; /* NAME=VALUE\0 ... \0, or NULL: the environment */

int dft_config_set(const char *block, size_t len)
{
	if (!block || !len || block[len - 1] != 0)
		return -EINVAL;
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, block, len);
	copy[len] = 0; /* the empty string that ends the list */
	/* Replaced only before anything that reads it runs (an attach's
	 * empty block at load, its settings at start). */
	char *old = (char *)__atomic_exchange_n(&overlay, copy, __ATOMIC_ACQ_REL);
	free(old);
	return 0;
}

void dft_config_free(void)
{
	free((char *)__atomic_exchange_n(&overlay, NULL, __ATOMIC_ACQ_REL));
}

int dft_config_attached(void)
{
	return __atomic_load_n(&overlay, __ATOMIC_ACQUIRE) != NULL;
}

const char *dft_getenv(const char *name)
{
	const char *o = __atomic_load_n(&overlay, __ATOMIC_ACQUIRE);
	if (!o)
		return getenv(name);
	size_t n = strlen(name);
	for (const char *p = o; *p; p += strlen(p) + 1)
		if (!strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}
