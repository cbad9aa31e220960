/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - live control of the running process: the control
 * endpoint and its tracefs-like namespace (ctl.c), and the in-memory trace
 * buffers that its `trace` and `trace_pipe` files read (ctl_live.c).
 *
 * Protocol, namespace and security: docs/CONTROL.md.
 */
#ifndef DYNFTRACE_CTL_H
#define DYNFTRACE_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "sbuf.h"

/* ---- ctl.c ------------------------------------------------------------- */

/* Constructor hook (init.c, after trace_init): start the control thread when
 * DYNFTRACE_CONTROL=1. Never fails the host: problems are logged once. */
void ctl_init(void) HIDDEN;
/* Detach: endpoint closed, control thread ended (0, or -ETIMEDOUT). */
int ctl_stop(void) HIDDEN;

/* ---- ctl_events.c: available_events, events/ (control thread) ---------- */
/* ARG is what follows "events/" ("" for the directory). 0 or -errno with
 * one sentence in WHY. */
int ctl_events_available(struct sbuf *out, char *why, size_t whylen) HIDDEN;
int ctl_events_read(const char *arg, struct sbuf *out, char *why, size_t whylen) HIDDEN;
int ctl_events_write(const char *arg, const char *val, char *why, size_t whylen) HIDDEN;

/* ---- ctl_live.c: writer side ------------------------------------------- */
/*
 * Called from tracer callbacks (any traced thread, also from signal handlers
 * that interrupt a callback of the same thread). Lock-free and wait-free:
 * one per-thread buffer of fixed 32-byte records, overwritten oldest first
 * (the kernel's overwrite mode), never waiting for a reader. Each returns 1
 * when the record was written, 0 when it was dropped (no buffer yet while a
 * nested handler creates one, no memory, thread exiting).
 */
extern int live_enabled HIDDEN; /* READ_ONCE; set once the endpoint runs */
/* Bumped by every clear: a frame whose entry went into the buffers before
 * the clear writes no exit after it (atomic loads). */
extern unsigned live_epoch HIDDEN;

int live_entry(uint32_t id, uint32_t depth, uint64_t ts) HIDDEN;
int live_exit(uint32_t id, uint32_t depth, uint64_t ts, uint64_t dur) HIDDEN;
/* A whole call (tracing_thresh): TS is its end. */
int live_call(uint32_t id, uint32_t depth, uint64_t ts, uint64_t dur) HIDDEN;
int live_function(uint32_t id, uintptr_t parent_ip, uint64_t ts) HIDDEN;
/* A trace_marker line (at most LIVE_MARKER_MAX bytes are kept). */
int live_marker(const char *text, size_t len, uint64_t ts) HIDDEN;
/* A tracepoint hit (tp_record.c): NAME with its fields, DATA/LEN encoded
 * as the session's `tracepoint` event (docs/FORMAT.md), shown as the marker
 * "tp: NAME(field=value, ...)". Async-signal-safe. */
struct dynftrace_tp_field;
int live_tracepoint(const char *name, const struct dynftrace_tp_field *f, unsigned nf,
		    const uint8_t *data, size_t len, uint64_t ts) HIDDEN;
#define LIVE_MARKER_MAX 1024

/* The calling thread exits: its buffer gets no more records. */
void live_thread_exit(void) HIDDEN;
/* fork, in the child: forget the parent's buffers. */
void live_atfork_child(void) HIDDEN;

/* ---- ctl_live.c: reader side (control thread only) --------------------- */

/* Format for the trace files: function_graph style (entry/exit/call
 * records) or function style; chosen by the current tracer. */
struct live_cursor;
/*
 * Open a merged (by timestamp) view of every thread's buffer. CONSUME 0:
 * the `trace` file, a snapshot up to now that consumes nothing; 1:
 * `trace_pipe`, reads from each buffer's consuming position, and
 * live_read() returns what has arrived since (call again later for more).
 * GRAPH selects the function_graph text layout. NULL: no memory.
 */
struct live_cursor *live_open(int consume, int graph) HIDDEN;
/* Format up to CAP bytes of text into BUF; 0 when the view has no more
 * (for a consuming cursor: for now). */
size_t live_read(struct live_cursor *c, char *buf, size_t cap) HIDDEN;
void live_close(struct live_cursor *c) HIDDEN;
/* Entries in the buffers now, and written since the last clear. */
void live_counts(uint64_t *in_buffer, uint64_t *written) HIDDEN;
/* `echo > trace`: forget everything the buffers hold. */
void live_clear(void) HIDDEN;
/* buffer_size_kb: per thread. Setting it clears the buffers (threads
 * switch to new buffers at their next record). -EINVAL outside 8..1048576. */
int live_set_size_kb(size_t kb) HIDDEN;
size_t live_size_kb(void) HIDDEN;
/* One call per thread buffer still held (newest first). */
struct live_thread_stats {
	pid_t tid;
	int exited;
	uint64_t entries; /* records in the buffer now (not yet overwritten or cleared) */
	uint64_t overrun; /* records overwritten */
	uint64_t bytes;	  /* bytes of records in the buffer now */
	uint64_t written; /* records written since the buffer was made */
	uint64_t read;	  /* records consumed by trace_pipe */
};
void live_for_each_thread(void (*cb)(const struct live_thread_stats *st, void *data),
			  void *data) HIDDEN;
/* Free buffers that nobody writes or reads any more (control thread,
 * periodically). */
void live_reap(void) HIDDEN;
/* Name of site ID (cached: also for objects closed since), or NULL. Control
 * thread only; takes patch_lock. */
const char *live_func_name(uint32_t id) HIDDEN;

#endif
