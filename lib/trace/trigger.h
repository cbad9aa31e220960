/* SPDX-License-Identifier: MIT */
/*
 * trigger.h - uftrace's triggers for the function_graph tracer:
 * PATTERN@ACTION[,ACTION...] (DYNFTRACE_TRIGGER, `record -T`), actions
 * depth=N, time=DUR, trace_on, trace_off, finish, filter, notrace
 * (backtrace is the reader's: cli/cmd_replay.c).
 *
 * Only the sites that carry a trigger pay for it: they leave the graph
 * shortcut (ops.c asks trig_site_generic when it picks routes) and take
 * the generic entry, trace_graph_enter, which applies their actions.
 * filter and notrace join the graph lists (trace.c: build_roots), as -F
 * and -N do. depth and time change the thread's limits until the
 * function returns: while such a frame is open its thread's
 * notrace_depth counts it too (trig_hold), which sends every other entry
 * of the thread to the generic path, where the limits are read; nothing
 * changes for other threads. trace_on, trace_off and finish switch
 * recording for the whole process (trace_ring_set: a bit of trace_fast,
 * which every path tests already: a paused process's entries take the
 * generic path).
 *
 * | state        | written by                          | read by                  |
 * |--------------|-------------------------------------|--------------------------|
 * | specs        | trig_init (before any callback)     | anyone                   |
 * | trace_trigs  | patch_lock holder (trig_rebuild),   | callbacks (RCU)          |
 * |              | old map freed after a grace period  |                          |
 * | trig_finished| callbacks (atomic)                  | callbacks                |
 */
#ifndef DYNFTRACE_TRIGGER_H
#define DYNFTRACE_TRIGGER_H

#include <stdint.h>

#include "internal.h"

#define TRIG_DEPTH     0x01
#define TRIG_TIME      0x02
#define TRIG_ON	       0x04
#define TRIG_OFF       0x08
#define TRIG_FINISH    0x10
#define TRIG_FILTER    0x20
#define TRIG_NOTRACE   0x40
#define TRIG_BACKTRACE 0x80 /* accepted, the reader's (replay) */
/* what needs the generic entry */
#define TRIG_GENERIC (TRIG_DEPTH | TRIG_TIME | TRIG_ON | TRIG_OFF | TRIG_FINISH)

struct trig {
	uint16_t flags;
	uint16_t depth;
	uint64_t time_ns;
};

/* By site id; flags 0: no trigger. */
struct trig_map {
	uint32_t n;
	struct trig t[];
};
extern struct trig_map *trace_trigs HIDDEN;

/* Parse SPEC ("pat@act,act;pat@act"): 0, or -EINVAL with WHY. Once,
 * before any callback. */
int trig_init(const char *spec, char *why, size_t whylen) HIDDEN;
/* Any trigger at all? Any filter / notrace one? */
int trig_any(void) HIDDEN;
int trig_has(uint16_t flag) HIDDEN;
/* The triggers of site S merged (patch_lock held). */
struct site;
struct trig trig_of(const struct site *s) HIDDEN;
/* Rebuild trace_trigs from the site table (patch_lock held). */
void trig_rebuild(void) HIDDEN;
/* ops.c's question: must S leave the graph shortcut? (patch_lock held) */
int trig_site_generic(const struct site *s) HIDDEN;

/* graph.c: apply the actions of function ID at its entry on thread G.
 * Returns 1 when it opened a trigger frame (the shadow entry must be
 * pushed with SE_TRIG, and trig_leave called when it closes). */
struct fg_thread;
int trig_enter(struct fg_thread *g, uint32_t id) HIDDEN;
void trig_leave(struct fg_thread *g) HIDDEN;

#endif
