/* SPDX-License-Identifier: MIT */
/*
 * tp_record.h - tracepoint payloads in recorded sessions (lib/trace/tp_record.c,
 * docs/FORMAT.md "tracepoint").
 */
#ifndef DYNFTRACE_TP_RECORD_H
#define DYNFTRACE_TP_RECORD_H

#include <stddef.h>

#include "internal.h"

struct dynftrace_tracepoint;
struct dynftrace_tp_field;

/* trace_init, once recording has started (trace_rec_on): reads
 * DYNFTRACE_EVENTS (comma-separated globs) and enables the matching
 * tracepoints of every object loaded so far. */
void tp_record_init(void) HIDDEN;
/* The hook tp_record_init hands tracepoint.c: after an object's table was
 * registered (constructor of a
 * program, library or dlopen'd object): enables its matching tracepoints.
 * Takes tp_record's lock, then tp_lock (never called holding either). */
void tp_record_table_added(struct dynftrace_tracepoint *const *start,
			   struct dynftrace_tracepoint *const *stop) HIDDEN;
/* The fork child has claimed its image name: describe the recorded
 * tracepoints again in its tracepoints-IMG.txt. */
void tp_record_atfork_child(void) HIDDEN;

/* Live control (ctl_events.c; control thread): attach (ON = 1) or detach
 * the recorder of TP, which writes its hits into the threads' rings (the
 * session's when recording, else live control's). 0, -EINVAL (untyped),
 * -ENOSPC, -ENOMEM, or the tracepoint API's errors. */
int tp_record_set(struct dynftrace_tracepoint *tp, int on) HIDDEN;
/* Is the recorder attached to TP? */
int tp_record_enabled(struct dynftrace_tracepoint *tp) HIDDEN;
/* The tracepoint of index IDX (a `tracepoint` event's tp): its name into
 * NAME, its fields (constant for the image's life). 0 or -ENOENT. */
int tp_record_lookup(unsigned idx, char *name, size_t namelen,
		     const struct dynftrace_tp_field **fields, unsigned *nfields) HIDDEN;

#endif
