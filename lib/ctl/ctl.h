/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - live control of the running process: the control
 * endpoint and its tracefs-like namespace (ctl.c), and the text of its
 * `trace` and `trace_pipe` files (ctl_live.c).
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
/* The runtime's fork handlers call these (init.c). */
void ctl_atfork_prepare(void) HIDDEN;
void ctl_atfork_parent(void) HIDDEN;
void ctl_atfork_child(void) HIDDEN;
/* Detach: endpoint closed, control thread ended (0, or -ETIMEDOUT). */
int ctl_stop(void) HIDDEN;

/* ---- ctl_events.c: available_events, events/ (control thread) ---------- */
/* ARG is what follows "events/" ("" for the directory). 0 or -errno with
 * one sentence in WHY. */
int ctl_events_available(struct sbuf *out, char *why, size_t whylen) HIDDEN;
int ctl_events_read(const char *arg, struct sbuf *out, char *why, size_t whylen) HIDDEN;
int ctl_events_write(const char *arg, const char *val, char *why, size_t whylen) HIDDEN;

/* ---- ctl_live.c: the text of `trace` and `trace_pipe` (control thread) ---- */
/*
 * They read the threads' rings (ring_read.c), the buffers the tracers write
 * and, under `record`, the consumer writes to the session: one copy of
 * every event. A view merges the threads by time and formats their events
 * as the kernel's files do.
 */
struct live_cursor;
/*
 * Open a view of every thread's ring, from its oldest event after the last
 * clear. CONSUME 0: the `trace` file, a snapshot up to now; 1:
 * `trace_pipe`, and live_read() returns what has arrived since (call again
 * later for more). Each view has its own position in every ring: none
 * takes events from another, or from the session's consumer. GRAPH selects
 * the function_graph text layout. NULL: no memory.
 */
struct live_cursor *live_open(int consume, int graph) HIDDEN;
/* Format up to CAP bytes of text into BUF; 0 when the view has no more
 * (for a consuming cursor: for now). */
size_t live_read(struct live_cursor *c, char *buf, size_t cap) HIDDEN;
void live_close(struct live_cursor *c) HIDDEN;
/* Drop what C has not handed out yet: the number of events dropped. */
size_t live_discard(struct live_cursor *c) HIDDEN;

#endif
