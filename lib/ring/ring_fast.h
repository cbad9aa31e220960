/* SPDX-License-Identifier: MIT */
/*
 * ring_fast.h - the writer's fast path of the per-thread ring (ring.c), as
 * inline functions, shared by ring.c and by the function-graph fast path
 * (graph_fast.c). The latter is compiled with -mgeneral-regs-only and may
 * call nothing that touches vector registers, so everything it needs from
 * the ring is here: the buffer layout, the clock latch, the signal-atomic
 * operations, reserve and commit. Design and concurrency: ring.c's header.
 */
#ifndef DYNFTRACE_RING_FAST_H
#define DYNFTRACE_RING_FAST_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "internal.h"
#include "arch.h"
#include "format.h"

#if defined(__SANITIZE_THREAD__)
#define RING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RING_TSAN 1
#endif
#endif

/* The event format (format.h), in the writer's names. */
#define RING_MAGIC	 FMT_PACKET_MAGIC
#define RING_HDR_SIZE	 FMT_HDR_SIZE
#define RING_COMPACT_HDR FMT_COMPACT_HDR
#define RING_EXT_HDR	 FMT_EXT_HDR
#define RING_TS_WRAP	 FMT_TS_WRAP
#define RING_NEST_MAX	 8 /* nested events per thread (signal handlers) */
#define RING_EV_ONE	 (UINT64_C(1) << 32)
#define RING_SHM_PATH	 192 /* a shared buffer file's path (the directory: 128) */

/* Packet header and context offsets (format.h). */
enum {
	PKT_MAGIC = FMT_PKT_MAGIC,
	PKT_UUID = FMT_PKT_UUID,
	PKT_STREAM_ID = FMT_PKT_STREAM_ID,
	PKT_TS_BEGIN = FMT_PKT_TS_BEGIN,
	PKT_TS_END = FMT_PKT_TS_END,
	PKT_CONTENT_SIZE = FMT_PKT_CONTENT_SIZE,
	PKT_PACKET_SIZE = FMT_PKT_PACKET_SIZE,
	PKT_DISCARDED = FMT_PKT_DISCARDED,
	PKT_SEQ = FMT_PKT_SEQ,
	PKT_PID = FMT_PKT_PID,
	PKT_TID = FMT_PKT_TID,
};

/*
 * A thread's buffer. The owner is the thread and its signal handlers.
 *
 * | field              | written by                        | read by                |
 * |--------------------|-----------------------------------|------------------------|
 * | offset             | owner (non-locked cmpxchg)        | owner; consumer; readers |
 * | last_ts            | owner                             | owner                  |
 * | nest               | owner (balanced inc/dec)          | owner; consumer (stop) |
 * | nest_size[], populated | owner                         | owner                  |
 * | stop               | consumer/shutdown/init; buffer_size_kb (RENEW bit) | owner (acquire) |
 * | lost, overwritten, retired | owner (one-instruction add) | owner; consumer; readers |
 * | plug_pos           | owner (before the plug)           | owner; consumer; readers |
 * | commit[]           | owner (add, release)              | consumer, readers (acquire) |
 * | consumed           | consumer (release)                | owner at switch        |
 * | exiting            | owner (release)                   | consumer               |
 * | gone               | consumer (release, list_lock)     | readers (acquire)      |
 * | refs               | readers (read_lock)               | consumer (read_lock)   |
 * | clear_*, pipe_read, comm | readers (atomic)            | readers; consumer      |
 * | next               | pusher before CAS; consumer (list_lock + read_lock) | all  |
 * | fd, file_*, lost_consumer, events_written, last_disc | consumer (list_lock) | stats |
 * | shm_path           | creator; consumer, shutdown (list_lock) | consumer         |
 * | the rest           | creator, constant                 | all                    |
 * Page contents: owner until the page is complete (commit), then consumer.
 * Readers (ring_read.c) copy from pages at any time, then check that the
 * writer has not begun to reuse the page.
 *
 * The whole mapping (this struct, commit[], the pages) may be a shared file
 * (ring.c, section 6): `dynftrace record` then reads it after the process
 * died without flushing (lib/ring/ring_salvage.c), which is why the consumer's
 * stream state (path, file_bytes, consumed, last_disc) lives here too.
 */
struct ring_buf {
	/* Writer's cache line. */
	uint64_t offset;
	uint64_t last_ts;
	uint8_t *data;
	uint64_t *commit;
	uint64_t buf_mask;
	uint32_t page_size;
	uint32_t page_shift;
	uint32_t nest;
	uint32_t stop;
	uint32_t pages;
	uint32_t exiting; /* RING_EXITING_*: the owner will write no more */
	/* The current page as the x86-64 assembly writers use it (ring_cache_page):
	 * an event fits when its end is below wlimit; its address is
	 * wbase + position; wcommit is the page's commit word. Owner only (and
	 * its signal handlers): stored after the offset moved to the page,
	 * wlimit last, so a writer that passes the limit sees the other two. */
	uint64_t wlimit;
	uintptr_t wbase;
	uint64_t *wcommit;
	/* The clock latch as of clk_seq == cseq (ring_clk_copy): the assembly
	 * writers' copy. Owner only, refreshed by an outermost writer. */
	uint64_t cseq; /* bit 32: none yet */
	uint64_t cbase_tsc, cmult, cbase_ns;
	/* Owner only. */
	uint32_t nest_size[RING_NEST_MAX];
	uint64_t plug_pos;  /* real end of the plugged page: see ring_switch() */
	uint64_t populated; /* first page of lap 0 without memory yet (ring.c,
			      section 6); UINT64_MAX: all have it */
	uint64_t lost;
	uint64_t overwritten;
	/* Pages whose slot was reused (retired), mod 16, in bits 60-63, and
	 * their events in bits 0-59: one add per page switch, so a reader gets
	 * both from one load (ring_read.c). */
	uint64_t retired;
	/* Consumer side. */
	uint64_t consumed __attribute__((aligned(64)));
	struct ring_buf *next;
	size_t map_size;
	pid_t pid, tid;
	int fd;
	uint64_t file_bytes;
	uint64_t events_written;
	uint64_t lost_consumer;
	uint64_t last_disc; /* events_discarded of the last packet written */
	int lost_reported;
	int quiet; /* ring_quiesce saw nest == 0 after stop: no event in flight */
	uint8_t hdr_tmpl[RING_HDR_SIZE];
	/* Readers (ring_read.c: `trace`, `trace_pipe`). */
	uint32_t gone;		  /* the writer is done and the consumer has flushed it */
	uint32_t refs;		  /* cursors reading it: it is not freed meanwhile */
	uint64_t clear_off;	  /* events below this offset are cleared */
	uint64_t clear_ev;	  /* events written before the clear */
	uint64_t pipe_read;	  /* events consumed by trace_pipe readers */
	uint64_t serial;	  /* buffers made before it in this process */
	char comm[16];		  /* the thread's name, once a reader asked */
	char path[PATH_MAX + 64]; /* the stream file; "" until named */
	/* For the recorder's salvage (ring_salvage.c): stored by the creator
	 * before shm_magic, which is stored last. */
	uint32_t ctl_size;	      /* bytes before data: this struct and commit[] */
	uint32_t overwrite;	      /* the buffer's mode */
	char img[32];		      /* IMG of the stream file: "PID" or "PID.K" */
	char shm_path[RING_SHM_PATH]; /* the shared file; "": anonymous memory */
	uint64_t shm_magic;	      /* RING_SHM_MAGIC once the rest is valid */
};

/* ring_buf.exiting: the thread is exiting (the consumer frees the buffer
 * once the thread is gone), or the buffer was replaced by one of another
 * size (buffer_size_kb: the owner writes no more into it). */
enum { RING_EXITING_THREAD = 1, RING_EXITING_RENEWED = 2 };
/* ring_buf.stop: bits. Either sends the writer to its slow path. */
enum { RING_STOP = 1, RING_STOP_RENEW = 2 };
#define RING_RETIRED_PAGE   (UINT64_C(1) << 60)
#define RING_RETIRED_EVENTS (RING_RETIRED_PAGE - 1)

/* Identifies a shared buffer file of this very layout. */
#define RING_SHM_MAGIC (UINT64_C(0x6466747269700000) ^ sizeof(struct ring_buf))

/* The consumer's wake-up (ring.c's table: writers xchg ring_waiting and
 * bump ring_wake_seq, the consumer waits on it). */
extern uint32_t ring_waiting HIDDEN;
extern uint32_t ring_wake_seq HIDDEN;

/* The thread's buffer (owner thread and its signal handlers). */
extern __thread struct ring_buf *ring_tls HIDDEN __attribute__((tls_model("initial-exec")));

/* ---- signal-atomic (non-locked) operations on owner data -------------- */

#ifdef RING_TSAN
static inline bool local_cmpxchg(uint64_t *p, uint64_t old, uint64_t new)
{
	return __atomic_compare_exchange_n(p, &old, new, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}
static inline void local_add(uint64_t *p, uint64_t v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELEASE);
}
#else
/* One instruction each, atomic against a signal handler on the same thread
 * (arch_impl.h). */
static inline bool local_cmpxchg(uint64_t *p, uint64_t old, uint64_t new)
{
	return arch_local_cmpxchg(p, old, new);
}
static inline void local_add(uint64_t *p, uint64_t v)
{
	arch_local_add(p, v);
}
#endif

/* A full barrier (TSan does not model fences: a locked no-op there). */
static inline void full_fence(void)
{
#ifdef RING_TSAN
	static uint32_t dummy;
	__atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Store-store order for the readers that copy pages a writer may reuse
 * meanwhile (ring_read.c): a compiler barrier on x86. Not under TSan (it
 * does not model fences; the readers' copies are not instrumented). */
static inline void ring_wfence(void)
{
#ifdef RING_TSAN
	barrier();
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

static inline void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static inline void put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}
static inline uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

struct clk_params {
	uint64_t base_tsc;
	uint64_t base_ns;
	uint64_t mult; /* ns per tick, 32.32 fixed point; CLK_MULT_NONE: none */
};
/* The latch's mult while the counter is not in use (before calibration, in
 * vdso mode): the sign bit, which clk_tsc_to_ns's range check refuses. Such
 * a latch has base_tsc 0, so the x86-64 fast paths' signed multiply of
 * (tsc - 0) by it overflows: they test that instead of clk_mode. */
#define CLK_MULT_NONE (UINT64_C(1) << 63)

enum { CLK_VDSO = 0, CLK_TSC = 1 };

/*
 * | field          | written by          | read by       |
 * |----------------|---------------------|---------------|
 * | clk_mode       | consumer (release)  | clock readers |
 * | clk_seq, clk_p | consumer (latch)    | clock readers |
 * | clk_* (rest)   | consumer            | consumer      |
 */
extern uint32_t clk_mode HIDDEN;
extern uint32_t clk_seq HIDDEN;
extern struct clk_params clk_p[2] HIDDEN;

static inline uint64_t clk_cycles(void)
{
	return arch_cycles();
}

/* A TSC read before base_tsc (an update a few cycles ago, the counter read
 * early) counts as base_tsc: the function stays monotonic. */
static inline uint64_t clk_apply(uint64_t tsc, uint64_t base_tsc, uint64_t base_ns, uint64_t mult)
{
	uint64_t d = tsc - base_tsc;
	if ((int64_t)d < 0)
		d = 0;
	return base_ns + (uint64_t)(((unsigned __int128)d * mult) >> 32);
}

/* The latch's stable copy into *L; the sequence it was read at, which the
 * reader compares with clk_seq once done (a change: read again). */
static inline uint32_t clk_latch(struct clk_params *l)
{
	uint32_t seq = __atomic_load_n(&clk_seq, __ATOMIC_ACQUIRE);
	const struct clk_params *p = &clk_p[seq & 1];
	l->base_tsc = __atomic_load_n(&p->base_tsc, __ATOMIC_RELAXED);
	l->base_ns = __atomic_load_n(&p->base_ns, __ATOMIC_RELAXED);
	l->mult = __atomic_load_n(&p->mult, __ATOMIC_RELAXED);
	return seq;
}

/* TSC mode only: false when the latch changed under us (retry). */
static inline bool clk_tsc_read(uint64_t *ns)
{
	struct clk_params l;
	uint32_t seq = clk_latch(&l);
	uint64_t tsc = clk_cycles();
	barrier();
	*ns = clk_apply(tsc, l.base_tsc, l.base_ns, l.mult);
	return __atomic_load_n(&clk_seq, __ATOMIC_RELAXED) == seq;
}

/* The owner moved the offset into virtual page VP: the assembly writers'
 * view of it (struct ring_buf: wlimit). A nested writer in between sees the
 * old limit, which the new offset is past, and takes the slow path. */
static inline void ring_cache_page(struct ring_buf *b, uint64_t vp)
{
	uint64_t start = vp << b->page_shift;
	__atomic_store_n(&b->wbase, (uintptr_t)b->data - (start & ~b->buf_mask), __ATOMIC_RELAXED);
	__atomic_store_n(&b->wcommit, &b->commit[vp & (b->pages - 1)], __ATOMIC_RELAXED);
	barrier();
	__atomic_store_n(&b->wlimit, start + b->page_size - 1, __ATOMIC_RELAXED);
}

/* Copy the clock's latch for the assembly writers (struct ring_buf: cseq).
 * The owner at nest 1 only: a nested writer never sees a half copy. */
static inline void ring_clk_copy(struct ring_buf *b)
{
	for (;;) {
		struct clk_params l;
		uint32_t seq = clk_latch(&l);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&clk_seq, __ATOMIC_RELAXED) != seq)
			continue;
		b->cseq = UINT64_C(1) << 32; /* a nested reader: no match meanwhile */
		barrier();
		b->cbase_tsc = l.base_tsc;
		b->cmult = l.mult;
		b->cbase_ns = l.base_ns;
		barrier();
		b->cseq = seq;
		return;
	}
}

static inline void write_header(uint8_t *p, unsigned id, uint64_t ts, uint32_t hdr)
{
	if (hdr == RING_COMPACT_HDR) {
		uint16_t h = (uint16_t)(id | (uint16_t)(ts << 3));
		memcpy(p, &h, 2);
	} else {
		p[0] = FMT_EXT_TAG;
		put_u32(p + 1, id);
		put_u64(p + 5, ts);
	}
}

/* The clock for a TSC value read earlier (by a trampoline, so that the read's
 * latency overlaps other work), when it is less than 2^32 ticks past the
 * latch's base and the rate is under 1 ns per tick (the consumer moves the
 * latch every second at most, the TSC runs at more than 1 GHz): one 64-bit
 * multiply instead of clk_apply's 128-bit one and double shift, which sit
 * on the writer's critical path (~1.5 ns each here); same result. False:
 * outside that range (or a TSC read before the base: clk_apply clamps
 * it), or the latch changed under us. */
static inline bool clk_tsc_to_ns(uint64_t tsc, uint64_t *ns)
{
	struct clk_params l;
	uint32_t seq = clk_latch(&l);
	uint64_t d = tsc - l.base_tsc;
	if (unlikely((d | l.mult) >> 32))
		return false;
	*ns = l.base_ns + ((d * l.mult) >> 32);
	barrier();
	return __atomic_load_n(&clk_seq, __ATOMIC_RELAXED) == seq;
}

/* futex wake without libc: graph_fast.c may not call out. */
static inline long ring_futex_wake(uint32_t *uaddr)
{
	return arch_futex_wake_raw(uaddr);
}

/* Wake the consumer if it says it waits. */
static __attribute__((noinline, unused)) void ring_wake(void)
{
	full_fence(); /* our commits before its flag */
	if (__atomic_load_n(&ring_waiting, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&ring_waiting, 0, __ATOMIC_SEQ_CST)) {
		__atomic_fetch_add(&ring_wake_seq, 1, __ATOMIC_SEQ_CST);
		ring_futex_wake(&ring_wake_seq);
	}
}

/*
 * Reserve at OFF (read before TS was taken, or TS clamped, see ring.c)
 * for the event of nesting level N: the event fits the page and nothing
 * nested in between. NULL: nothing changed, take the slow path.
 */
static inline uint8_t *ring_try_reserve(struct ring_buf *b, uint32_t n, uint64_t off, unsigned id,
					uint32_t payload, uint64_t ts, uint64_t *tsp)
{
	uint64_t last = b->last_ts;
	if (unlikely(ts < last))
		ts = last;
	uint32_t hdr = (ts - last < RING_TS_WRAP && id <= FMT_COMPACT_ID_MAX) ? RING_COMPACT_HDR
									      : RING_EXT_HDR;
	uint32_t size = hdr + payload;
	/* A page never ends at page_size - 1: that is the plug (ring.c). */
	if (unlikely((off & (b->page_size - 1)) + size >= b->page_size - 1) ||
	    unlikely(!local_cmpxchg(&b->offset, off, off + size)))
		return NULL;
	b->last_ts = ts;
	uint8_t *p = b->data + (off & b->buf_mask);
	write_header(p, id, ts, hdr);
	b->nest_size[n] = size;
	*tsp = ts;
	return p + hdr;
}

/*
 * Commit SIZE bytes of an event in page slot SLOT and leave nesting level
 * N, as tramp.S's RING_COMMIT: one add, whose result nothing waits for. A
 * page this completes (an outer event's, after a nested one switched
 * pages) is found by the consumer's next pass; a stop polls the nest
 * (ring_quiesce).
 */
static inline void ring_commit_slot(struct ring_buf *b, size_t slot, uint32_t size, uint32_t n)
{
	local_add(&b->commit[slot], size | RING_EV_ONE);
	barrier();
	__atomic_store_n(&b->nest, n, __ATOMIC_RELAXED);
}

/* Commit the event whose payload is at PAYLOAD (ring_event_end). */
static inline void ring_commit(struct ring_buf *b, uint8_t *payload)
{
	uint32_t n = __atomic_load_n(&b->nest, __ATOMIC_RELAXED) - 1;
	ring_commit_slot(b, (size_t)(payload - 1 - b->data) >> b->page_shift, b->nest_size[n], n);
}

#endif
