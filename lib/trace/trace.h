/* SPDX-License-Identifier: MIT */
/*
 * trace.h - run-time control of the built-in tracers of lib/trace/trace.c, for the
 * control endpoint (lib/ctl/ctl.c).
 *
 * Contract shared by every function here:
 *  - Called by the control thread (never from a tracer callback: they
 *    re-patch the process through the ops API). They serialise on trace.c's
 *    tctl_lock.
 *  - Each change takes effect before the call returns: sites are patched or
 *    unpatched at once, nothing restarts.
 *  - Errors are negative errno values; WHY (WHYLEN bytes, may be NULL)
 *    receives one sentence naming the problem, e.g. "no function matches
 *    'foo*'".
 */
#ifndef DYNFTRACE_TRACE_H
#define DYNFTRACE_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct sbuf;

/* The endpoint started: without a session directory, the rings start in
 * memory (KB per thread, 0: RING_KB_DEFAULT) for `trace` and `trace_pipe`;
 * under `record` they read the session's. */
void trace_ctl_start(size_t kb) HIDDEN;

/* current_tracer: "nop", "function", "function_graph" or "profile".
 * Switching clears what `trace` shows (as the kernel does); switching to
 * profile starts new statistics. -EINVAL: unknown name. */
int trace_set_tracer(const char *name, char *why, size_t whylen) HIDDEN;
const char *trace_get_tracer(void) HIDDEN;
/* "function_graph function profile nop" */
const char *trace_available_tracers(void) HIDDEN;

/* tracing_on. Off unpatches every site of the tracer (a NOP each, unlike
 * the kernel, where the callbacks keep running); on patches them again. */
int trace_set_tracing_on(int on, char *why, size_t whylen) HIDDEN;
int trace_get_tracing_on(void) HIDDEN;

/* The function lists, with the kernel's semantics. */
enum trace_list {
	TL_FILTER,	   /* set_ftrace_filter: only these (empty: all) */
	TL_NOTRACE,	   /* set_ftrace_notrace: never these */
	TL_GRAPH_FUNCTION, /* set_graph_function: graphs rooted here (empty: all) */
	TL_GRAPH_NOTRACE,  /* set_graph_notrace: not these, nor what they call */
	TL_COUNT
};
/*
 * TEXT: globs separated by white space; "!glob" removes. APPEND 0 replaces
 * the list (empty TEXT clears it), 1 adds to it. Every glob must be valid
 * and match at least one function, else nothing changes (-EINVAL, naming
 * the glob). -E2BIG: more than 4096 globs in the list.
 */
int trace_set_list(enum trace_list l, const char *text, int append, char *why,
		   size_t whylen) HIDDEN;
/* The functions the list selects, one name per line, or the kernel's
 * "#### all functions enabled ####" / "#### no functions disabled ####". */
void trace_read_list(enum trace_list l, struct sbuf *out) HIDDEN;

/* max_graph_depth (0: unlimited). */
int trace_set_max_depth(unsigned depth) HIDDEN;
/* set_ftrace_args: uftrace's argument and return value specifications
 * ("FUNC@arg1/x,retval;FUNC2@arg2/s", args.h), replacing the current
 * ones ("" clears): 0, -EINVAL with WHY, -ENOMEM. The text of the current
 * ones, a line each, into OUT. */
int trace_set_args(const char *spec, char *why, size_t whylen) HIDDEN;
void trace_read_args(struct sbuf *out) HIDDEN;
unsigned trace_get_max_depth(void) HIDDEN;
/* tracing_thresh in ns (0: off): function_graph keeps only calls at least
 * that long, written whole at their end. */
int trace_set_thresh(uint64_t ns) HIDDEN;
uint64_t trace_get_thresh(void) HIDDEN;

/* trace_stat/function: the profiler's table (calls and times per function
 * of the current profile session), sorted by total time. */
void trace_read_profile(struct sbuf *out) HIDDEN;

/* trace_marker: a user line in the trace (the calling thread's ring: the
 * session when recording, and `trace`); at most RING_MARKER_MAX bytes are
 * kept. Dropped while tracing_on is 0, as the kernel does. Returns 0. */
int trace_write_marker(const char *text, size_t len) HIDDEN;

/* Recording into a session directory (`dynftrace record`)? */
int trace_recording(void) HIDDEN;
/* Detach (attach.c): everything off and flushed; then, with every other
 * thread stopped, each thread's hooked returns put back. */
void trace_detach_prepare(void) HIDDEN;
int trace_detach_thread(struct dft_thread *t, void *ctx) HIDDEN;
void trace_detach_frames(struct dft_thread *t, uint64_t sp, uint64_t lo, uint64_t hi,
			 uint64_t *link) HIDDEN;
void trace_detach_free(void) HIDDEN;

#endif
