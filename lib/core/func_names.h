/* SPDX-License-Identifier: MIT */
/* func_names.h - function names by site id, for readers of the rings. */
#ifndef DYNFTRACE_FUNC_NAMES_H
#define DYNFTRACE_FUNC_NAMES_H

#include <stdint.h>

#include "internal.h"

/* The name of site ID (cached: also for objects closed since), or NULL.
 * Control thread (or one reader at a time); takes patch_lock. */
const char *func_name(uint32_t id) HIDDEN;
/* The address (ip) of site ID, cached as its name, or 0. */
uintptr_t func_addr(uint32_t id) HIDDEN;
/* Detach, no reader left: the cache goes. */
void func_names_free(void) HIDDEN;

#endif
