/* SPDX-License-Identifier: MIT */
/*
 * trace_read.h - the reader of a session directory (docs/FORMAT.md).
 *
 * tr_open() reads the text files (info, sites-*.txt, maps-*.txt, the uuid of
 * ctf/metadata) and maps every ctf/stream-* file read-only. Events are then
 * decoded one stream at a time with tr_stream_next(), or across all streams
 * in time order with the tr_merge_*() functions.
 *
 * Nothing in the files is trusted. Every packet and event is checked against
 * FORMAT.md before it is used: packet magic, uuid, stream id, sizes against
 * the file size, content_size <= packet_size, sequence numbers, pid and tid
 * against the file name, event ids, payload bounds, function ids against the
 * process's sites file, timestamps that never go backwards. The first problem
 * ends the stream with one sentence in stream->err naming the file and the
 * byte offset ("DIR/ctf/stream-12-12: bad packet magic at offset 65536"); the
 * events decoded before it stay valid and have been delivered.
 *
 * Errors are negative errno values: -ENOENT (no such session), -EINVAL
 * (damaged file; the message says which and where), -ENOMEM. Not thread-safe:
 * one session per thread.
 */
#ifndef DYNFTRACE_TRACE_READ_H
#define DYNFTRACE_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h"

#define TR_PACKET_MAGIC FMT_PACKET_MAGIC
#define TR_HEADER_BYTES FMT_HDR_SIZE /* packet header + packet context */
#define TR_ERR_LEN	512

/* Event types: the ids of FORMAT.md plus what the reader adds. */
enum tr_type {
	TR_ENTRY = FMT_EV_ENTRY,
	TR_EXIT = FMT_EV_EXIT,
	TR_FUNCTION = FMT_EV_FUNCTION,
	TR_CALL = FMT_EV_CALL,
	TR_LOST = FMT_EV_LOST,
	TR_MARKER = FMT_EV_MARKER,
	TR_EXIT_DEPTH = FMT_EV_EXIT_DEPTH,
	TR_TRACEPOINT =
	    FMT_EV_TRACEPOINT, /* func: tracepoint index; arg: payload length; text: payload */
	TR_DISCARDED = 100,    /* a packet's events_discarded grew by arg */
	TR_END = 101,	       /* the stream ends (cleanly or at damage); ts = last time */
};

struct tr_event {
	int type;	  /* enum tr_type */
	uint32_t func;	  /* ENTRY, FUNCTION, CALL: a site id of the process */
	uint64_t ts;	  /* CLOCK_MONOTONIC ns (CALL: the end of the call) */
	uint64_t arg;	  /* FUNCTION: parent ip; CALL: duration ns;
			     LOST, DISCARDED: count; EXIT_DEPTH: frames */
	const char *text; /* MARKER: NUL-terminated, inside the mapping;
			     TRACEPOINT: the arg payload bytes (FORMAT.md) */
	uint64_t off;	  /* byte offset of the event in its file */
};

/* One line of sites-KEY.txt: "ID ADDR SIZE NAME OBJECT". */
struct tr_site {
	uint32_t id;
	uint64_t addr, size;
	const char *name; /* never NULL */
	const char *obj;  /* "" when absent */
	char *dname;	  /* demangled name, filled by tr_func_name() */
	int dname_done;
};

/* One line of maps-KEY.txt: "START END BIAS PATH". */
struct tr_map {
	uint64_t start, end, bias;
	const char *path;
	struct elf_image *img; /* loaded on demand for symbols; NULL until then */
	int img_failed;
};

/* One process image of the session. KEY is the file-name key: "PID", or
 * "PID.N" for the N-th image after an exec, if the runtime names them so. */
struct tr_proc {
	char key[32];
	pid_t pid;
	int has_sites;
	struct tr_site *sites; /* sorted by id */
	size_t nsites;
	int dense;		  /* sites[i].id == i for all i */
	struct tr_site **by_addr; /* sorted by addr, for caller lookups */
	struct tr_map *maps;	  /* sorted by start */
	size_t nmaps;
	char *text; /* backing storage of names and paths */
	char *maps_text;
	/* tracepoints-KEY.txt, read on first use by tr_tracepoint_format() */
	int tp_loaded;
	char *tp_text;
	char **tp_lines; /* by index: "NAME K:S:F ..." inside tp_text, or NULL */
	size_t ntp;
};

struct tr_stream {
	struct tr_session *sess;
	struct tr_proc *proc;
	size_t proc_idx;
	char *path; /* as shown in messages: "DIR/ctf/stream-P-T" */
	char *name; /* "stream-KEY-TID[.N]", KEY being "PID" or "PID.K" */
	pid_t pid, tid;
	unsigned gen; /* N of "stream-KEY-TID.N" (a reused thread id), else 0 */
	const uint8_t *data;
	uint64_t size;
	/* cursor */
	uint64_t pkt;			/* offset of the current packet */
	uint64_t pkt_content, pkt_next; /* content end, next packet's offset */
	uint64_t pos;			/* next event */
	int in_packet;
	int done;  /* TR_END delivered */
	int ended; /* no more events; TR_END pending */
	uint64_t prev_ts, last_ts;
	uint64_t discarded;
	uint64_t seq;
	int have_packet;
	int failed; /* err holds the damage */
	char err[TR_ERR_LEN];
	char pre_err[TR_ERR_LEN]; /* found at open (no sites file): reported at the start */
	/* counts since the last rewind, complete once TR_END was read */
	uint64_t nevents; /* events decoded (not counting DISCARDED/END) */
	uint64_t ncalls;  /* ENTRY + FUNCTION + CALL events */
	uint64_t nlost;	  /* sum of LOST events' counts */
	uint64_t npackets;
	uint64_t first_ts;
	int have_first;
	/* kept across rewinds: set when TR_END was delivered once */
	int complete;
	uint64_t final_discarded, final_nlost, final_nevents, final_ncalls;
	/* merge state */
	struct tr_event next;
	int has_next;
};

struct tr_lost_line {
	pid_t pid, tid;
	uint64_t count;
};

/* "unflushed: PID SIG MODE": process PID ended without the runtime's flush
 * (SIG: the signal that killed it, 0 unknown); RECOVERED: its buffers were
 * read back from shared memory by record, else what they held is lost and
 * not counted. "salvaged: IMG TID EVENTS" lines add up in EVENTS. */
struct tr_unflushed {
	pid_t pid;
	int sig;
	int recovered;
	uint64_t events;
};

struct tr_info {
	int version;
	char *command, *tracer, *filter, *notrace;
	uint64_t depth, time_filter_ns, buffer_kb, start_ns, end_ns;
	int overwrite, has_start, has_end;
	char (*pids)[32]; /* "pid:" lines: "PID" or "PID.K" (an exec'd image) */
	size_t npids;
	int has_exit, exit_signaled, exit_code;
	pid_t exit_pid;
	struct tr_lost_line *lost;
	size_t nlost;
	struct tr_unflushed *unflushed;
	size_t nunflushed;
	uint64_t salvaged; /* events of "salvaged:" lines (all processes) */
};

struct tr_session {
	char *dir;
	struct tr_info info;
	uint8_t uuid[16];
	int has_uuid;
	int has_metadata;
	struct tr_proc *procs;
	size_t nprocs;
	struct tr_stream *streams; /* sorted by pid, then tid */
	size_t nstreams;
	char err[TR_ERR_LEN];
};

/*
 * Open the session in DIR. Returns 0, or -errno with s->err holding one
 * sentence: -ENOENT (no such directory, or no info file in it), -EINVAL (a
 * damaged info, metadata, sites or maps file), -ENOMEM. A damaged stream is
 * not an error here: it fails when read. tr_close() must be called in all
 * cases.
 */
int tr_open(struct tr_session *s, const char *dir);
void tr_close(struct tr_session *s);

/* The text of a TRACEPOINT event of ST: "NAME(field=value, ...)", decoded
 * with DIR/tracepoints-KEY.txt (docs/FORMAT.md): integers in decimal,
 * pointers as 0x..., strings quoted with control characters shown as '?'.
 * Without a description: "#INDEX(N bytes)"; a payload that does not match
 * its description ends with " <damaged>". Always fills BUF. */
void tr_tracepoint_format(struct tr_stream *st, const struct tr_event *ev, char *buf, size_t size);

/* Restart ST from its first packet (counts reset). */
void tr_stream_rewind(struct tr_stream *st);

/*
 * Decode the next event of ST into EV. Returns 1 with an event; the last
 * event of every stream is TR_END (also after damage); then 0. Damage sets
 * st->failed and st->err before TR_END.
 */
int tr_stream_next(struct tr_stream *st, struct tr_event *ev);

/* Read ST to its end: fills the counts; returns 0 or -EINVAL (st->err). */
int tr_stream_scan(struct tr_stream *st);

/* The site ID of process P, or NULL. */
const struct tr_site *tr_site(const struct tr_proc *p, uint32_t id);
/* Display name of site ID: demangled and shortened for C++ when tr_demangle
 * is set (default), "?" for an unknown id (the reader never delivers one). */
extern int tr_demangle;
const char *tr_func_name(const struct tr_proc *p, uint32_t id);
/* Does a function match GLOBS by its display or its raw name? */
struct cli_globs;
int tr_func_match(const struct tr_proc *p, uint32_t id, const struct cli_globs *globs);
/*
 * Name the code at run-time address IP of process P into BUF: "func" for a
 * traced function, "func [libx.so]" or "func+0x12 [libx.so]" from the
 * object's symbols through maps-KEY.txt, else "0x7f...". Returns BUF.
 */
const char *tr_symbolize(struct tr_proc *p, uint64_t ip, char *buf, size_t size);

/* Events lost by thread TID of process PID: the larger of the info file's
 * "lost:" lines and the stream's events_discarded, plus its LOST events.
 * The stream, if any, must have been scanned. */
uint64_t tr_thread_lost(const struct tr_session *s, pid_t pid, pid_t tid);

/*
 * Print "thread TID lost N events" lines (N with thousands separators) for
 * every thread that lost events, then one line per process that ended
 * without flushing its buffers ("process 1234 was killed by signal 9
 * (Killed) before it could flush: ..."), each prefixed by PREFIX, after
 * scanning every stream. Returns the number of lines.
 */
#include <stdio.h>
int tr_print_losses(struct tr_session *s, FILE *out, const char *prefix);
/* The "process ... before it could flush" lines alone; returns how many
 * say that events were lost uncounted. */
int tr_print_unflushed(const struct tr_session *s, FILE *out, const char *prefix);

/* Earliest time of the session: start_ns, or an earlier first event. */
uint64_t tr_base_ts(struct tr_session *s);

/* Merge every stream of the session in time order (ties: stream order). */
struct tr_merge {
	struct tr_session *sess;
	struct tr_stream **heap;
	size_t n;
};
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
 * open at the stream's last time.
 */
enum tr_leave_how {
	TR_LEAVE_RETURN = 0,	 /* an exit event */
	TR_LEAVE_UNWIND = 1,	 /* an exit_depth event (longjmp, exception) */
	TR_LEAVE_UNFINISHED = 2, /* still open when the stream ended */
};

struct tr_frame {
	uint32_t func;
	uint32_t flags;	   /* for the consumer */
	uint64_t ts;	   /* entry time */
	uint64_t idx;	   /* ordinal of the entry in its stream, from 0 */
	uint64_t child_ns; /* time spent in completed children */
	uint64_t user;	   /* for the consumer */
};

struct tr_walk;
struct tr_walk_ops {
	/* The frame was pushed (F is the top of the stack). */
	int (*enter)(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev);
	/* F ends at TS (still on the stack, popped on return). */
	int (*leave)(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how);
	/* Every other event: FUNCTION, CALL, LOST, MARKER, DISCARDED, orphan
	 * EXIT, TR_END (after the unfinished frames were closed). */
	int (*other)(struct tr_walk *w, const struct tr_event *ev);
};

struct tr_walk {
	const struct tr_walk_ops *ops;
	void *data;
	struct tr_stream *st;
	struct tr_frame *stack;
	size_t depth, cap;
	uint64_t nentries;
	uint64_t last_ts;
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

/* Copy S into BUF with control characters shown as '?' (names and marker
 * texts come from files and go to terminals). Returns BUF. */
const char *tr_printable(const char *s, char *buf, size_t size);

#endif
