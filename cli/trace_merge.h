/* SPDX-License-Identifier: MIT */
/*
 * trace_merge.h - the top layer of the reader: the streams of a session
 * merged in time order, and the call stack of one stream (trace_stream.h
 * decodes the events both consume).
 */
#ifndef DYNFTRACE_TRACE_MERGE_H
#define DYNFTRACE_TRACE_MERGE_H

#include <stddef.h>
#include <stdint.h>

#include "trace_session.h"
#include "trace_stream.h"

/* Merge every stream of the session in time order (ties: stream order). */
struct tr_merge_src {
	struct tr_stream *st;
	struct tr_event next; /* its next event, decoded ahead */
};
struct tr_merge {
	struct tr_session *sess;
	struct tr_merge_src *src;   /* one per stream of the session */
	struct tr_merge_src **heap; /* those not at their end, by next time */
	size_t n;
};
/* Start a merge of the streams WANT accepts (all without WANT), each from
 * its beginning. 0 or -ENOMEM. */
int tr_merge_init(struct tr_merge *m, struct tr_session *s, int (*want)(struct tr_stream *, void *),
		  void *data);
/* Next event across streams, *st its stream; 1, or 0 at the end. */
int tr_merge_next(struct tr_merge *m, struct tr_stream **st, struct tr_event *ev);
void tr_merge_free(struct tr_merge *m);

/*
 * The call stack of one stream, fed with its events in order. Each consumer
 * (replay, report, dump) gets its frames through callbacks. Exits pop the
 * innermost frame (an exit with nothing open is an orphan: after losses or
 * in overwrite mode), EXIT_DEPTH pops that many, TR_END closes what is still
 * open at the stream's last time. CTX_SWITCH sets the top frames aside as
 * one context's and brings back another's (a function that switched
 * stacks is still open); at TR_END, each context set aside comes back (a
 * CTX_SWITCH of no frames) and its frames close unfinished.
 */
enum tr_leave_how {
	TR_LEAVE_RETURN = 0,	 /* an exit event */
	TR_LEAVE_UNWIND = 1,	 /* an exit_depth event (longjmp, exception) */
	TR_LEAVE_UNFINISHED = 2, /* still open when the stream ended */
	TR_LEAVE_LOST = 3,	 /* an exit_lost event: returned, its exit not recorded */
};

struct tr_frame {
	uint32_t func;
	uint32_t flags;	   /* for the consumer */
	uint64_t ts;	   /* entry time */
	uint64_t idx;	   /* ordinal of the entry in its stream, from 0 */
	uint64_t child_ns; /* time spent in completed children */
	uint64_t user;	   /* for the consumer */
	uint64_t user2;	   /* for the consumer */
};

struct tr_walk;
struct tr_walk_ops {
	/* The frame was pushed (F is the top of the stack). */
	int (*enter)(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev);
	/* F ends at TS (still on the stack, popped on return). */
	int (*leave)(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how);
	/* Every other event: FUNCTION, CALL, LOST, MARKER, DISCARDED, orphan
	 * EXIT, CTX_SWITCH (after the stack changed), TR_END (after the
	 * unfinished frames were closed). */
	int (*other)(struct tr_walk *w, const struct tr_event *ev);
	/* Optional. A context switch (CTX_SWITCH): F is set aside at TS, top
	 * first, still on the stack; F came back at TS, bottom first, on the
	 * stack. */
	int (*suspend)(struct tr_walk *w, struct tr_frame *f, uint64_t ts);
	int (*resume)(struct tr_walk *w, struct tr_frame *f, uint64_t ts);
};

/* The open frames of a context the stream switched away from. */
struct tr_ctx_set {
	uint32_t id;
	struct tr_frame *f;
	size_t n, cap;
};

struct tr_walk {
	const struct tr_walk_ops *ops;
	void *data;
	struct tr_stream *st;
	struct tr_frame *stack;
	size_t depth, cap;
	uint64_t nentries;
	uint64_t last_ts;
	uint32_t ctx;		 /* the current context (CTX_SWITCH; 0 first) */
	struct tr_ctx_set *sets; /* the others' open frames */
	size_t nsets, capsets;
	const struct tr_event *cur; /* the event being fed (leave: its exit, with
				       its return value) */
};

void tr_walk_init(struct tr_walk *w, const struct tr_walk_ops *ops, void *data,
		  struct tr_stream *st);
/* Feed one event. Returns 0, a callback's non-zero return, or -ENOMEM. */
int tr_walk_feed(struct tr_walk *w, const struct tr_event *ev);
void tr_walk_free(struct tr_walk *w);
/* The frame below F, or NULL. */
static inline struct tr_frame *tr_walk_parent(struct tr_walk *w, struct tr_frame *f)
{
	return f > w->stack ? f - 1 : NULL;
}

#endif
