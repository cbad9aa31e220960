/* SPDX-License-Identifier: MIT */
/*
 * ring.h - per-thread lock-free trace buffers whose pages are CTF packets,
 * drained to the session directory by one consumer thread.
 *
 * Format: docs/FORMAT.md. Implementation: lib/ring/ring.c.
 *
 * Writer side (the traced thread, any context including signal handlers that
 * interrupt a write of the same thread):
 *
 *	uint64_t ts;
 *	uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
 *	if (p) {
 *		memcpy(p, &func, 4);
 *		ring_event_end(p);
 *	}
 *
 * ring_event_begin() reserves header + payload in the thread's current page
 * with a signal-atomic (non-locked) compare-and-exchange loop that reads the
 * clock inside the loop, so timestamps never go backwards along a stream even
 * when a signal handler writes in the middle (LTTng's scheme). It writes the
 * event header itself (compact when the gap to the previous event allows,
 * else extended) and returns where the payload goes; ring_event_end()
 * commits. NULL means the event was lost (buffer full in no-overwrite mode,
 * no memory, recording stopped); every loss is counted for the thread and
 * shows in the next packet's events_discarded and in the info file.
 *
 * The buffers have several readers: the consumer thread, which writes
 * them to the session directory (none in a ring without one: then the
 * buffers only keep the newest events), and live control's `trace` and
 * `trace_pipe` (ring_read.c), each with its own cursors.
 */
#ifndef DYNFTRACE_RING_H
#define DYNFTRACE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "format.h"

/* Event ids (format.h). Ids above FMT_COMPACT_ID_MAX always use the
 * extended header. */
enum {
	RING_EV_ENTRY = FMT_EV_ENTRY,
	RING_EV_ENTRY16 = FMT_EV_ENTRY16, /* an entry whose site id fits 16 bits */
	RING_EV_EXIT = FMT_EV_EXIT,
	RING_EV_FUNCTION = FMT_EV_FUNCTION,
	RING_EV_FUNCTION_NEAR = FMT_EV_FUNCTION_NEAR,
	RING_EV_CALL = FMT_EV_CALL,
	RING_EV_LOST = FMT_EV_LOST,
	RING_EV_MARKER = FMT_EV_MARKER,
	RING_EV_EXIT_DEPTH = FMT_EV_EXIT_DEPTH,
	RING_EV_TRACEPOINT = FMT_EV_TRACEPOINT, /* tp_record.c */
	RING_EV_CTX_SWITCH = FMT_EV_CTX_SWITCH, /* context.c */
	RING_EV_ENTRY_ARGS = FMT_EV_ENTRY_ARGS, /* trace/args.c */
	RING_EV_EXIT_RETVAL = FMT_EV_EXIT_RETVAL,
	RING_EV_EXIT_LOST = FMT_EV_EXIT_LOST, /* trace/graph.c: exits owed */
};

/* Defaults (a 0 in struct ring_config): 64 pages of 64 KiB, i.e. 4 MiB per
 * thread (memory is touched only as the thread writes). With 1 MiB, one
 * thread writing 25 M function_graph calls/s lost events on the loaded
 * 2-core VM when the consumer was not scheduled for 5 ms; with 4 MiB none
 * (docs/PERFORMANCE.md). pages is rounded up to a power of two. */
#define RING_DEFAULT_PAGE_SIZE 65536
#define RING_DEFAULT_PAGES     64
/* The largest payload: a trace_marker line of 1024 bytes and its NUL. */
#define RING_MARKER_MAX	 1024
#define RING_PAYLOAD_MAX (RING_MARKER_MAX + 1)
/* buffer_size_kb of a ring without a session directory: default and limits */
#define RING_KB_DEFAULT 512
#define RING_KB_MIN	8
#define RING_KB_MAX	262144
/* Buffers of exited threads kept for `trace` (unless cleared), once live
 * control reads the buffers. */
#define RING_KEEP_GONE 16

struct ring_config {
	const char *ctf_dir;   /* session's ctf/ directory (exists); NULL: in memory
				  only, for live control (overwrite, no consumer
				  writes; img, info_path and overwrite ignored) */
	const char *info_path; /* session's info file, for "lost:" lines; may be NULL */
	const char *img;       /* process image name for file names: "PID" or "PID.K"
				  (docs/FORMAT.md); NULL: the pid */
	size_t page_size; /* bytes per page = per CTF packet; power of 2, >= 4096; 0: default */
	size_t pages;	  /* pages per thread, >= 2; 0: default */
	int overwrite;	  /* 1: flight recorder, keep the newest */
	int resume;	  /* 1: the same session again after a failed exec: the
			     buffers that outlived it go on in their streams */
};

/* Names this process image for the stream files opened from now on
 * (stream-IMG-TID): for a forked child, after ring_atfork_child() (which
 * resets the name to the child's pid). IMG as in ring_config.img. */
void ring_set_img(const char *img) HIDDEN;

/* Sets CFG's page_size and pages for BUFFER_KB KiB per thread (0: the
 * default): 64 KiB pages, smaller ones (down to 4 KiB) so that there are
 * at least 4 pages when possible; the number of pages is rounded down to a
 * power of two, at least 2 (so 8 KiB is the smallest buffer). */
void ring_config_size(struct ring_config *cfg, size_t buffer_kb) HIDDEN;

/*
 * Start recording into CFG->ctf_dir: write ctf/metadata if it does not exist
 * yet (O_EXCL: the first process of a session writes it, with a fresh uuid
 * that later processes read back), start the consumer thread
 * ("dynftrace-rec", all signals blocked, SIGXFSZ too so a file size limit
 * gives EFBIG instead of killing). Without a directory, the buffers only
 * keep the newest events for the readers; the consumer thread then keeps
 * the clock and frees the buffers of exited threads. 0 or -errno (-EBUSY:
 * started already).
 */
int ring_init(const struct ring_config *cfg) HIDDEN;

/* buffer_size_kb of live control: the size of every buffer, KB rounded as
 * ring_config_size does (RING_KB_MIN to RING_KB_MAX, else -EINVAL). Each
 * thread moves to a buffer of the new size at its next event (the caller
 * clears what the old ones hold: ring_clear_all). -EBUSY while recording
 * into a session directory: its streams keep their buffers. */
int ring_set_size_kb(size_t kb) HIDDEN;
/* 1 while a recording runs (ring_init done, ring_shutdown not begun). */
int ring_recording(void) HIDDEN;
/* 1 in a child that shares its parent's memory (vfork, clone with CLONE_VM):
 * the recording's state is the parent's, not to be ended or restarted. */
int ring_vfork_child(void) HIDDEN;
size_t ring_size_kb(void) HIDDEN;
/* Keep the buffers of the N threads that exited last (unless cleared) for
 * the readers; 0 (the default): free them once written. */
void ring_keep_exited(unsigned n) HIDDEN;

/* Flush every buffer to disk, stop the consumer, append the loss lines to
 * the info file. Idempotent. Called at process exit (destructor/atexit) and
 * when recording is switched off. After it, ring_event_begin returns NULL. */
void ring_shutdown(void) HIDDEN;
/* Detach, every other thread stopped, after ring_shutdown: unmap every
 * buffer. 0, or -EAGAIN if a stopped thread holds the list. */
int ring_detach_free(void) HIDDEN;

/* Writer API: see the comment at the top. PAYLOAD <= 256 bytes. */
uint8_t *ring_event_begin(unsigned id, size_t payload, uint64_t *ts) HIDDEN;
void ring_event_end(uint8_t *payload) HIDDEN;
/* As ring_event_begin, but a failure is not counted lost: for an event
 * that stands for others already counted (trace/graph.c: exit_lost). */
uint8_t *ring_event_try(unsigned id, size_t payload, uint64_t *ts) HIDDEN;

/* Count LOST events for this thread without writing anything (nothing once
 * the recording has ended: what is traced after the end is not lost). */
void ring_count_lost(uint64_t lost) HIDDEN;

/* The trace clock: CLOCK_MONOTONIC nanoseconds (the fastest source that
 * gives them: the calibrated cycle counter when the TSC is invariant, else the vDSO). */
uint64_t ring_now(void) HIDDEN;

/* The calling thread is exiting: its buffer is flushed and freed by the
 * consumer. Safe to call twice. */
void ring_thread_exit(void) HIDDEN;

/*
 * The calling thread dies of fatal signal SIG (interpose.c's handler, which
 * then re-raises it). Async-signal-safe. Stops every writer, takes the
 * stream files over from the consumer (waiting, 5 s at most, for it to
 * finish the buffer it is writing), writes every buffer up to its last
 * event that is whole and committed (a thread caught inside an event,
 * this one included, loses that event), appends the "lost:" lines and
 * "signal: IMG TID SIG" to the info file (docs/FORMAT.md). Recording is
 * over for the process afterwards. Returns 0; -ENODATA: not recording;
 * -ESRCH: a vfork child (the buffers are its parent's); -EALREADY: another
 * thread flushed (this call returns when it has finished, 10 s at most);
 * -ETIMEDOUT / -EDEADLK: the consumer did not hand over (timeout, or it is
 * this very thread, interrupted in ring_shutdown): nothing written, every
 * buffered event reported lost.
 */
int ring_emergency_flush(int sig) HIDDEN;
/* Run by the thread that flushes on a fatal signal (whether or not the
 * buffers could be written), before that thread or another dying one can
 * end the process: async-signal-safe (trace.c: the profile table). Set
 * before ring_init, read by the flusher (atomic). */
extern void (*ring_fatal_hook)(int sig) HIDDEN;
/* Run (on a thread of its own) when the recorder that DYNFTRACE_RECORDER
 * names ("PID START": its pid and /proc start time) is gone, so that a
 * recording nobody will end does not go on for ever; unset: the recording
 * just ends (ring_shutdown). Set by the attach (attach.c). */
extern void (*ring_orphan_hook)(pid_t recorder) HIDDEN;

/* fork: in the child, forget the parent's buffers (they are the parent's
 * to write) and restart the consumer lazily on the child's first event.
 * The prepare and parent hooks bracket the fork in the parent (the forking
 * thread has no buffer meanwhile: the child must not write into a shared
 * one; the parent's events meanwhile are kept aside and written in its
 * handler: see ring.c, section 6, and ring_fork.c). */
void ring_atfork_prepare(void) HIDDEN;
void ring_atfork_parent(void) HIDDEN;
void ring_atfork_child(void) HIDDEN;

/*
 * Are PAGE's bytes from the packet header to END exactly EVENTS whole
 * events? Payload sizes per id as in docs/FORMAT.md; an id this does not
 * know fails the check. For pages a writer may have left in the middle of
 * an event (the emergency flush; ring_salvage.c).
 */
bool ring_prefix_ok(const uint8_t *page, uint32_t end, uint64_t events) HIDDEN;
bool ring_pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t at) HIDDEN;

/*
 * What a process that died without flushing left in one shared buffer file
 * (ring.c, section 6), recovered by `dynftrace record` (the CLI links
 * ring_salvage.c): the packets its consumer had not written are appended
 * to the thread's stream in CTF_DIR (created if it has none), those a
 * writer was in the middle of checked as the emergency flush does (an
 * event in flight is lost). Nothing moves in a dead process's buffer, so
 * no waiting.
 */
struct ring_salvage {
	pid_t pid, tid;
	char img[32];	      /* IMG of the stream file */
	int flushed;	      /* the runtime had flushed it: nothing done */
	uint64_t events;      /* events appended */
	uint64_t lost;	      /* all the thread's lost events (its "lost:" line) */
	uint64_t overwritten; /* the part of LOST that overwrite mode replaced */
};
/* 0, -EINVAL (not a buffer file of this version), or -errno (the stream
 * file could not be written: R says what was appended before). */
int ring_salvage(const char *path, const char *ctf_dir, struct ring_salvage *r) HIDDEN;

/*
 * From /proc/PID/stat (PID 0: this process): its state letter, number of
 * threads and start time (clock ticks after boot: with the pid, it names
 * one process, as a pid may be used again). The runtime reads its own
 * start time, the recorder a process's, to tell whether the process that
 * made a buffer is gone (docs/FORMAT.md, "started:"). No allocation, no
 * stdio stream. 0, -ENOENT (no such process), or -errno.
 */
struct ring_proc {
	char state;
	uint64_t threads, start;
};
int ring_proc_stat(pid_t pid, struct ring_proc *p) HIDDEN;

struct ring_thread_stats {
	pid_t tid;
	int exited;	 /* the thread is gone: the buffer is kept for `trace` */
	uint64_t events; /* events written to disk */
	uint64_t lost;	 /* events not in the session: dropped or overwritten */
	uint64_t bytes;	 /* bytes written to disk so far */
	/* In the buffer (what `trace` can show; approximate while it is written): */
	uint64_t entries;  /* events in the buffer now, after the last clear */
	uint64_t written;  /* events written since the last clear */
	uint64_t in_bytes; /* bytes the buffer holds now */
	uint64_t overrun;  /* events overwritten (overwrite mode) */
	uint64_t read;	   /* events consumed by trace_pipe readers */
};
/* For live control: one call per thread buffer (newest first), under the
 * consumer's lock. Returns the number of threads. */
int ring_for_each_thread(void (*cb)(const struct ring_thread_stats *st, void *data),
			 void *data) HIDDEN;

/* ---- readers (ring_read.c): live control's `trace` and `trace_pipe` ---- */
/*
 * Readers copy events out of the buffers while the writers go on: a page
 * may be reused under a reader, which then notices it, counts what it
 * missed and goes on from the oldest page still there (never returns a
 * torn event). Each reader has its own cursor per buffer, so neither the
 * consumer nor another reader takes events from it. The functions below
 * are called by one thread at a time (the control thread).
 */
struct ring_event {
	uint64_t ts;
	uint64_t off; /* where it is in its buffer (bytes since the buffer was made) */
	uint32_t id;  /* RING_EV_* */
	uint32_t len; /* payload bytes */
	uint8_t payload[RING_PAYLOAD_MAX];
};

/* A reader's place in one buffer (ring_read.c says what each field is). */
struct ring_cursor {
	struct ring_buf *b;
	uint64_t vp;	  /* page */
	uint32_t pos;	  /* next event's byte in the page */
	uint32_t avail;	  /* bytes of the page known to be whole events */
	uint32_t page_ev; /* events of the page, once complete */
	uint32_t pev;	  /* events of the page before pos */
	uint8_t entered;  /* the page's header names vp: this lap's */
	uint8_t complete; /* avail is the whole page */
	uint8_t pipe;	  /* consuming (trace_pipe) */
	uint8_t fresh;	  /* not placed yet */
	uint8_t bad;	  /* the page does not decode: skipped once complete */
	uint8_t whole;	  /* the buffer is younger than the reader: what is gone
			     before its first look is lost to it too */
	uint64_t ts;	  /* time of the previous event (compact headers) */
	uint64_t ev;	  /* events of the buffer before pos */
	uint64_t end;	  /* snapshot: the offset when it was opened */
	uint64_t lost;	  /* overwritten before this cursor got to them, not yet reported */
};
enum { RING_RD_END = -1, RING_RD_NONE = 0, RING_RD_EVENT = 1 };

/* CB for every buffer, newest first; the list stays put meanwhile. CB may
 * take a reference (ring_buf_get) that keeps the buffer until ring_buf_put. */
void ring_for_each_buf(void (*cb)(struct ring_buf *b, void *data), void *data) HIDDEN;
void ring_buf_get(struct ring_buf *b) HIDDEN; /* only from ring_for_each_buf's CB */
/* GEN: ring_reader_gen() when the reference was taken (references taken
 * before a fork are the parent's: nothing is done). */
void ring_buf_put(struct ring_buf *b, unsigned long gen) HIDDEN;
unsigned long ring_reader_gen(void) HIDDEN;
pid_t ring_buf_tid(const struct ring_buf *b) HIDDEN;
/* The thread's name (read once; "<...>" once it is gone) into OUT (N bytes). */
void ring_buf_comm(struct ring_buf *b, char *out, size_t n) HIDDEN;
/* Would a reader opened now find nothing in B (exited, and cleared since)? */
bool ring_buf_drained(struct ring_buf *b) HIDDEN;
/* B's number, unique in the process (a freed buffer's memory may come back
 * as another buffer: this tells them apart). */
uint64_t ring_buf_serial(const struct ring_buf *b) HIDDEN;

/* From B's oldest event after the last clear. PIPE 0: a snapshot of B up to
 * now (`trace`); 1: trace_pipe, following the writer. */
void ring_cursor_open(struct ring_cursor *c, struct ring_buf *b, int pipe) HIDDEN;
/* The next event into *E: RING_RD_EVENT; RING_RD_NONE: nothing yet
 * (trace_pipe: try again later); RING_RD_END: the snapshot is complete, or
 * the buffer is gone and read. C->lost grows by the events that were
 * overwritten before they could be read (the caller reports and zeroes it). */
int ring_cursor_next(struct ring_cursor *c, struct ring_event *e) HIDDEN;

/* `echo > trace`: every buffer's events so far are hidden from every
 * reader, and not counted as lost. */
void ring_clear_all(void) HIDDEN;
/* Events in all buffers now, and written since the last clear. */
void ring_counts(uint64_t *in_buffer, uint64_t *written) HIDDEN;

/* Which source ring_now() reads now: "tsc" (the calibrated cycle counter) or "vdso"
 * (clock_gettime). Starts as "vdso"; the consumer switches to "tsc" a few
 * ms after ring_init when the TSC is invariant (constant_tsc + nonstop_tsc)
 * or DYNFTRACE_CLOCK=tsc, never with DYNFTRACE_CLOCK=vdso. */
const char *ring_clock_name(void) HIDDEN;
/* |CLOCK_MONOTONIC - ring_now()| in ns found at the last re-synchronisation
 * (the consumer re-synchronises the TSC clock every second and slews the
 * error away); 0 before the first one. */
uint64_t ring_clock_error_ns(void) HIDDEN;

/*
 * Environment (read by ring_init):
 *   DYNFTRACE_CLOCK=vdso|tsc        force a clock source
 *   DYNFTRACE_RING_TEST_STALL=1     tests: the consumer writes nothing until
 *                                   ring_shutdown (buffers fill up)
 *   DYNFTRACE_SHM=DIR               buffers are files in DIR (ring.c, section 6;
 *                                   set by `dynftrace record`)
 *   DYNFTRACE_RING_TEST_NOSHM=1     tests: as if no buffer file could be made
 *
 * Hooks the runtime must call:
 *   ring_thread_exit()   when a thread exits (pthread key destructor);
 *   ring_atfork_prepare(), ring_atfork_parent(), ring_atfork_child()  fork;
 *   ring_shutdown()      at process exit and before execve.
 */

#endif
