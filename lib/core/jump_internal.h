/* SPDX-License-Identifier: MIT */
/*
 * jump_internal.h - what static keys (jump.c), static calls (static_call.c)
 * and tracepoints (tracepoint.c) share inside the runtime. Never installed.
 *
 * All three keep per-object tables registered by constructors the public
 * headers emit in every object; all their bookkeeping is protected by
 * patch_lock() (see patch.h), which is recursive.
 */
#ifndef DYNFTRACE_JUMP_INTERNAL_H
#define DYNFTRACE_JUMP_INTERNAL_H

#define DYNFTRACE_RUNTIME 1 /* the headers emit no registration constructors */

#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "patch.h"

/* Resolve a self-relative 32-bit offset stored at P. */
static inline uintptr_t rel_addr(const int32_t *p)
{
	return (uintptr_t)p + (intptr_t)*p;
}

/* Counters of the three modules (read relaxed, written under patch_lock). */
struct jump_counters {
	unsigned long jump_tables, jump_entries, key_changes;
	unsigned long call_tables, calls, call_sites, call_sites_inline, call_sites_missed;
	unsigned long call_updates;
};
extern struct jump_counters jump_ctr HIDDEN;

/* Make sure the engine is set up (trap handler, sync); 0 or -errno. */
int jump_engine_ready(void) HIDDEN;

/* Declare the 5-byte instructions at ADDRS (n of them) as patch points. */
int jump_points_add(const uintptr_t *addrs, size_t n) HIDDEN;
/* Forget them again (the object goes away). */
void jump_points_remove(const uintptr_t *addrs, size_t n) HIDDEN;

/* static_call.c, for tracepoint.c: update with a plain void * target. */
struct dynftrace_static_call_key;
int static_call_update_locked(struct dynftrace_static_call_key *key, void *func) HIDDEN;
/* tracepoint.c: FN is told of every tracepoint table registered from now
 * on, outside every lock of the static layer (the session's tracepoint
 * recorder, which enables matching tracepoints in objects loaded later).
 * Set once. */
struct dynftrace_tracepoint;
typedef void (*tp_table_hook)(struct dynftrace_tracepoint *const *start,
			      struct dynftrace_tracepoint *const *stop);
void tracepoint_on_table_added(tp_table_hook fn) HIDDEN;

#endif
