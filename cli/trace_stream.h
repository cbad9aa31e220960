/* SPDX-License-Identifier: MIT */
/*
 * trace_stream.h - decoding one stream of an open session (trace_session.h)
 * with the format defined once in lib/ring/format.h, and what is known of the
 * session once its streams were read (losses, its first time).
 *
 * Every packet and event is checked against docs/FORMAT.md before it is
 * used: packet magic, uuid, stream id, sizes against the file size,
 * content_size <= packet_size, sequence numbers, pid and tid against the
 * file name, event ids, payload bounds, function ids against the process's
 * sites file, timestamps that never go backwards. The first problem ends
 * the stream with one sentence in stream->err naming the file and the byte
 * offset ("DIR/ctf/stream-12-12: bad packet magic at offset 65536"); the
 * events decoded before it stay valid and have been delivered.
 */
#ifndef DYNFTRACE_TRACE_STREAM_H
#define DYNFTRACE_TRACE_STREAM_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "format.h"
#include "trace_session.h"

#define TR_PACKET_MAGIC FMT_PACKET_MAGIC
#define TR_HEADER_BYTES FMT_HDR_SIZE /* packet header + packet context */

/* Event types: the ids of FORMAT.md plus what the reader adds. */
enum tr_type {
	TR_ENTRY = FMT_EV_ENTRY,
	TR_EXIT = FMT_EV_EXIT,
	TR_FUNCTION = FMT_EV_FUNCTION,
	TR_CALL = FMT_EV_CALL,
	TR_LOST = FMT_EV_LOST,
	TR_MARKER = FMT_EV_MARKER,
	TR_EXIT_DEPTH = FMT_EV_EXIT_DEPTH,
	TR_EXIT_LOST = FMT_EV_EXIT_LOST, /* arg: calls whose exits were lost */
	TR_TRACEPOINT =
	    FMT_EV_TRACEPOINT, /* func: tracepoint index; arg: payload length; text: payload */
	TR_CTX_SWITCH = FMT_EV_CTX_SWITCH, /* func: to; arg: depth | from << 32 (TR_CTX_*) */
	TR_DISCARDED = 100,		   /* a packet's events_discarded grew by arg */
	TR_END = 101, /* the stream ends (cleanly or at damage); ts = last time */
};

struct tr_event {
	int type;	     /* enum tr_type */
	uint32_t func;	     /* ENTRY, FUNCTION, CALL: a site id of the process */
	uint64_t ts;	     /* CLOCK_MONOTONIC ns (CALL: the end of the call) */
	uint64_t arg;	     /* FUNCTION: parent ip; CALL: duration ns;
				LOST, DISCARDED: count; EXIT_DEPTH: frames;
				ENTRY: 0, or for a frame a fork child inherited
				(delivered first, ts the fork's time) its entry
				time in the parent */
	const char *text;    /* MARKER: NUL-terminated, inside the mapping;
				TRACEPOINT: the arg payload bytes (FORMAT.md) */
	const uint8_t *vals; /* ENTRY, EXIT from entry_args, exit_retval: the
				values (format.h's items, checked), else NULL */
	uint16_t nvals;	     /* their bytes */
	uint64_t off;	     /* byte offset of the event in its file */
};

/* The fields of a CTX_SWITCH event: the top DEPTH open frames are context
 * FROM's (set aside); those set aside as context TO's come back. */
#define TR_CTX_DEPTH(ev) ((uint32_t)(ev)->arg)
#define TR_CTX_FROM(ev)	 ((uint32_t)((ev)->arg >> 32))
#define TR_CTX_TO(ev)	 ((ev)->func)

/* Restart ST from its first packet (counts reset). */
void tr_stream_rewind(struct tr_stream *st);

/* Make CUR a second cursor over the file of ST, at its first packet: it
 * decodes the same events, with counts of its own. It shares ST's mapping
 * and names (valid until tr_close) and needs no freeing; it is not one of
 * the session's streams (losses and counts are read from those). */
void tr_stream_fork(const struct tr_stream *st, struct tr_stream *cur);

/*
 * Decode the next event of ST into EV. Returns 1 with an event; the last
 * event of every stream is TR_END (also after damage); then 0. Damage sets
 * st->failed and st->err before TR_END.
 */
int tr_stream_next(struct tr_stream *st, struct tr_event *ev);

/* Read ST to its end: fills the counts; returns 0 or -EINVAL (st->err). */
int tr_stream_scan(struct tr_stream *st);

/* The text of a TRACEPOINT event of ST: "NAME(field=value, ...)", decoded
 * with DIR/tracepoints-KEY.txt (docs/FORMAT.md): integers in decimal,
 * pointers as 0x..., strings quoted with control characters shown as '?'.
 * Without a description: "#INDEX(N bytes)"; a payload that does not match
 * its description ends with " <damaged>". Always fills BUF. */
void tr_tracepoint_format(struct tr_stream *st, const struct tr_event *ev, char *buf, size_t size);

/* One field of a tracepoint hit (tr_tracepoint_fields). */
struct tr_tp_field {
	char name[128];
	char kind;	 /* 'i' signed, 'u' unsigned, 'p' pointer, 's' string */
	uint64_t u;	 /* 'u', 'p': the value; 'i': its bits */
	int64_t i;	 /* 'i': the value, sign-extended */
	const char *str; /* 's': NUL-terminated inside the mapping, NULL for NULL */
};

/* The fields of TRACEPOINT event EV of ST, decoded as tr_tracepoint_format
 * does, each given to FN (a non-zero return stops and is returned); the
 * tracepoint's name into NAME ("#INDEX" without a description). Returns 0,
 * -ENOENT without a description, -EINVAL when the payload does not match
 * it (the fields before the mismatch were given). */
int tr_tracepoint_fields(struct tr_stream *st, const struct tr_event *ev, char *name,
			 size_t name_size, int (*fn)(const struct tr_tp_field *, void *),
			 void *data);

/* Events lost by thread TID of process PID: the larger of the info file's
 * "lost:" lines and the stream's events_discarded, plus its LOST events.
 * The stream, if any, must have been scanned. */
uint64_t tr_thread_lost(const struct tr_session *s, pid_t pid, pid_t tid);

/*
 * Print "thread TID lost N events" lines (N with thousands separators) for
 * every thread that lost events (saying apart how many of them overwrite
 * mode replaced by newer ones), then one line per process that ended
 * without flushing its buffers ("process 1234 was killed by signal 9
 * (Killed) before it could flush: ..."), each prefixed by PREFIX, after
 * scanning every stream not read to its end yet. Returns the number of
 * lines.
 */
int tr_print_losses(struct tr_session *s, FILE *out, const char *prefix);
/* Of tr_thread_lost: the events overwrite mode replaced by newer ones (the
 * info file's "overwritten:" lines), by design rather than dropped. */
uint64_t tr_thread_overwritten(const struct tr_session *s, pid_t pid, pid_t tid);
/* Of tr_thread_lost: what the writer dropped because its buffer was full. */
uint64_t tr_thread_dropped(const struct tr_session *s, pid_t pid, pid_t tid);

/* Earliest time of the session: start_ns, or an earlier first event. */
uint64_t tr_base_ts(struct tr_session *s);

#endif
