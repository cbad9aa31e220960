/* SPDX-License-Identifier: MIT */
/*
 * ring_flush.c - the ring's emergency flush: the events of a process dying
 * of a signal, written out by the dying thread (ring.c's design comment,
 * section 6, and the comment below).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ring.h"
#include "ring_fast.h"
#include "ring_int.h"

/* ---- fatal signal: the emergency flush ----------------------------------- */
/*
 * A process that dies of a signal runs no destructor: the events still in
 * the buffers would be lost. interpose.c's handler for the fatal signals
 * calls ring_emergency_flush() on the dying thread before the signal is
 * re-raised. It runs in a signal handler that may have interrupted
 * anything, so it is async-signal-safe: no malloc, no stdio, no lock; only
 * system calls (open, pwrite, ftruncate, close, membarrier, futex) on data
 * that nobody else can change meanwhile, as follows.
 *
 * Files and consumer-side fields. The consumer (or consumer_final() run by
 * ring_shutdown on a program thread) owns them while it runs a pass, which
 * it brackets with emerg_enter()/emerg_leave() and breaks with
 * emerg_yield() between buffers, where no stream file is open and no page
 * half written:
 *
 *   IDLE --emerg_enter--> CONSUMER --emerg_leave--> IDLE
 *     |                      |
 *     | the dying thread     | the dying thread
 *     v        (CAS)         v        (CAS), then futex wait
 *   DYING <--emerg_yield-- WANT
 *            emerg_leave     (the consumer hands over and stops for good)
 *
 * So exactly one party writes a given page to a given file: the consumer up
 * to its hand-over, the dying thread after. The dying thread waits for the
 * consumer to finish the buffer it is on (bounded I/O), at most
 * EMERG_WAIT_NS; never for a writer. If the consumer does not hand over in
 * time nothing is written and every buffered event is reported lost.
 *
 * Writers. ring_state leaves RING_ON (buffers created from now on start
 * stopped), every buffer gets stop = 1, then membarrier: a writer that has
 * not begun an event by now never will (the asymmetric Dekker of
 * ring_quiesce). Other threads keep running; nobody waits for them:
 *   - a buffer whose nest is 0 (checked around a stable offset) has no
 *     event in flight: everything it holds is written, as buf_flush does;
 *   - a writer inside an event (another thread caught in the middle, or the
 *     dying thread interrupted there) loses that event. Complete pages are
 *     written; of the page it writes in, the committed bytes, if they are a
 *     prefix of whole events. That holds unless a signal handler of that
 *     thread wrote events inside the interrupted one, so the prefix is
 *     decoded (sizes from the event ids, docs/FORMAT.md) and must end
 *     exactly there with exactly the committed count; nest > 1 (nested
 *     events in flight) or a failed check drops the page;
 *   - in overwrite mode, the oldest pages that the reservations still in
 *     flight (at most nest) could reuse are skipped.
 * Pages are never modified here (a running writer may close its page
 * meanwhile): each packet's context is rebuilt in a local copy.
 *
 * Then, for every buffer, its "lost:" line (what it could not keep, the
 * events in flight included), and "signal: IMG TID SIG" in the info file.
 * A stream file keeps whole packets: a failed or short write is truncated
 * back and writing stops (those events are counted lost).
 *
 * | field            | written by                               | read by          |
 * |------------------|------------------------------------------|------------------|
 * | emerg_state      | consumer code (list_lock), dying thread   | both             |
 * |                  | (CAS only; see the diagram)              |                  |
 * | emerg_owner      | consumer code before entering            | dying thread     |
 * | emerg_by         | first dying thread (CAS 0 -> its tid)    | later ones       |
 * | emerg_done       | the flusher when it ends (futex wake)    | later ones       |
 * | emerg_pid        | ring_init, atfork child                  | dying thread     |
 * | emerg_disk_error,| the flusher                              | the flusher      |
 * |   emerg_lost0    |                                          |                  |
 * Once emerg_state is EM_DYING the flusher owns every buffer's consumer-side
 * fields (struct ring_buf), the stream files and the loss lines.
 */

#define EMERG_SPIN 200	/* snapshots of a busy writer's page */
#define EMERG_SNAP 1024 /* buffers whose losses are taken at the stop */

/* The flusher's: each buffer's `lost` when writers stopped (list order).
 * What a thread that keeps running tries to trace after that is not part
 * of the recording (it ends at the fatal signal) and not counted. */
static uint64_t emerg_lost0[EMERG_SNAP];
HIDDEN void (*ring_fatal_hook)(int sig);

/* B's "lost:" line; LOST0: its writer's own count when writers stopped. */
static void emerg_lost_line(struct ring_buf *b, uint64_t lost0)
{
	if (b->lost_reported)
		return;
	b->lost_reported = 1;
	uint64_t over = __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED);
	uint64_t n = lost0 + over + b->lost_consumer;
	char line[192], *p = line, *end = line + sizeof(line);
	if (!n || !emerg_cat(&p, end, "lost: ") || !emerg_cat_u64(&p, end, (uint64_t)b->pid) ||
	    !emerg_cat(&p, end, " ") || !emerg_cat_u64(&p, end, (uint64_t)b->tid) ||
	    !emerg_cat(&p, end, " ") || !emerg_cat_u64(&p, end, n) || !emerg_cat(&p, end, "\n"))
		return;
	/* As lost_report (ring.c): the overwritten part on its own line. */
	if (over && (!emerg_cat(&p, end, "overwritten: ") ||
		     !emerg_cat_u64(&p, end, (uint64_t)b->pid) || !emerg_cat(&p, end, " ") ||
		     !emerg_cat_u64(&p, end, (uint64_t)b->tid) || !emerg_cat(&p, end, " ") ||
		     !emerg_cat_u64(&p, end, over) || !emerg_cat(&p, end, "\n")))
		return;
	if (lost0 && (!emerg_cat(&p, end, "dropped: ") ||
		      !emerg_cat_u64(&p, end, (uint64_t)b->pid) || !emerg_cat(&p, end, " ") ||
		      !emerg_cat_u64(&p, end, (uint64_t)b->tid) || !emerg_cat(&p, end, " ") ||
		      !emerg_cat_u64(&p, end, lost0) || !emerg_cat(&p, end, "\n")))
		return;
	emerg_info_line(line, (size_t)(p - line));
}

/* stream_open() without stdio; the file (fd) is the flusher's own. */
static int emerg_open(struct ring_buf *b)
{
	if (b->path[0]) {
		int fd = open(b->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		struct stat st;
		/* whole packets only: nothing after what the consumer wrote */
		if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > b->file_bytes &&
		    ftruncate(fd, (off_t)b->file_bytes) != 0) {
			close(fd);
			return -1;
		}
		return fd;
	}
	for (uint64_t i = 0; i < 1000; i++) {
		char *p = b->path, *end = b->path + sizeof(b->path) - 1;
		bool ok = emerg_cat(&p, end, ctf_dir) && emerg_cat(&p, end, "/stream-") &&
			  (image_key[0] ? emerg_cat(&p, end, image_key)
					: emerg_cat_u64(&p, end, (uint64_t)b->pid)) &&
			  emerg_cat(&p, end, "-") && emerg_cat_u64(&p, end, (uint64_t)b->tid) &&
			  (!i || (emerg_cat(&p, end, ".") && emerg_cat_u64(&p, end, i)));
		if (!ok)
			break;
		*p = 0;
		int fd = open(b->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			break;
	}
	b->path[0] = 0;
	return -1;
}

/*
 * Write one packet: PAGE's first LEN bytes, EVENTS events. A complete page
 * keeps its context; a partial one (PARTIAL) gets timestamp_end = now and
 * its sizes. The context goes from a local copy: the page is not touched.
 */
static void emerg_packet(struct ring_buf *b, int *fd, const uint8_t *page, size_t len,
			 uint64_t events, bool partial, uint64_t lost0)
{
	if (disk_error || emerg_disk_error) {
		b->lost_consumer += events;
		return;
	}
	if (*fd < 0 && (*fd = emerg_open(b)) < 0) {
		emerg_disk_error = 1;
		b->lost_consumer += events;
		return;
	}
	uint8_t hdr[RING_HDR_SIZE];
	uint64_t disc;
	memcpy(hdr, page, RING_HDR_SIZE);
	if (partial) {
		uint64_t now = ring_now(), begin = get_u64(hdr + PKT_TS_BEGIN);
		put_u64(hdr + PKT_TS_END, now > begin ? now : begin);
		put_u64(hdr + PKT_CONTENT_SIZE, (uint64_t)len * 8);
		put_u64(hdr + PKT_PACKET_SIZE, (uint64_t)len * 8);
		disc = lost0;
	} else {
		disc = get_u64(hdr + PKT_DISCARDED);
	}
	disc += __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED);
	if (disc < b->last_disc)
		disc = b->last_disc;
	put_u64(hdr + PKT_DISCARDED, disc);
	if (!ring_pwrite_all(*fd, hdr, RING_HDR_SIZE, b->file_bytes) ||
	    !ring_pwrite_all(*fd, page + RING_HDR_SIZE, len - RING_HDR_SIZE,
			     b->file_bytes + RING_HDR_SIZE)) {
		if (ftruncate(*fd, (off_t)b->file_bytes) != 0)
			b->path[0] = 0; /* not a file of whole packets any more */
		emerg_disk_error = 1;
		b->lost_consumer += events;
		return;
	}
	b->file_bytes += len;
	b->events_written += events;
	b->last_disc = disc;
}

/*
 * Page VP of B is not complete: how many of its bytes hold whole committed
 * events (*EV of them), 0 for none that can be proved; *INFLIGHT: events
 * begun and not committed (lost). Its writer is the dying thread (DYING: it
 * does not move) or a thread that may be running.
 */
static uint32_t emerg_tail(struct ring_buf *b, uint64_t vp, bool dying, uint64_t *ev,
			   uint64_t *inflight)
{
	const uint32_t ps = b->page_size;
	uint64_t *cwp = &b->commit[vp & (b->pages - 1)];
	*inflight = 0;
	for (int i = 0; i < EMERG_SPIN; i++) {
		/* No event in flight around a stable offset: all reserved bytes of
		 * the page are committed. */
		uint32_t n1 = __atomic_load_n(&b->nest, __ATOMIC_ACQUIRE);
		uint64_t o1 = __atomic_load_n(&b->offset, __ATOMIC_ACQUIRE);
		uint64_t cw = __atomic_load_n(cwp, __ATOMIC_ACQUIRE);
		uint64_t o2 = __atomic_load_n(&b->offset, __ATOMIC_ACQUIRE);
		uint32_t n2 = __atomic_load_n(&b->nest, __ATOMIC_ACQUIRE);
		if (o1 == o2 && !n1 && !n2) {
			if ((o1 >> b->page_shift) != vp)
				break; /* not its current page: an older one left open */
			uint64_t pos = o1 & (ps - 1);
			if (pos == ps - 1)
				pos = __atomic_load_n(&b->plug_pos, __ATOMIC_RELAXED);
			if ((uint32_t)cw != pos)
				break;
			*ev = cw >> 32;
			return (uint32_t)pos;
		}
		if (dying || (uint32_t)cw == ps)
			break;
		arch_cpu_relax();
	}
	uint32_t nest = __atomic_load_n(&b->nest, __ATOMIC_ACQUIRE);
	uint64_t cw = __atomic_load_n(cwp, __ATOMIC_ACQUIRE);
	uint32_t end = (uint32_t)cw;
	*ev = cw >> 32;
	*inflight = nest;
	if (end == ps) {
		if ((__atomic_load_n(&b->offset, __ATOMIC_ACQUIRE) >> b->page_shift) > vp)
			return ps; /* closed meanwhile: whole */
		/* The word of the slot's previous lap: the switch into this page
		 * stopped before retiring it (ring_switch). Nothing here yet. */
		*ev = 0;
		return 0;
	}
	if (nest > 1 || end < RING_HDR_SIZE || end > ps ||
	    !ring_prefix_ok(b->data + ((vp << b->page_shift) & b->buf_mask), end, *ev))
		return 0;
	return end;
}

/* Events committed in page VP of B, CUR its writer's page when we looked
 * (a word still holding the previous lap, see emerg_tail, counts none). */
static uint64_t emerg_events(struct ring_buf *b, uint64_t vp, uint64_t cur)
{
	uint64_t cw = __atomic_load_n(&b->commit[vp & (b->pages - 1)], __ATOMIC_ACQUIRE);
	if (vp == cur && (uint32_t)cw == b->page_size &&
	    (__atomic_load_n(&b->offset, __ATOMIC_ACQUIRE) >> b->page_shift) == cur)
		return 0;
	return cw >> 32;
}

/* Write what B holds that can be proved whole; count the rest lost. */
static void emerg_buf_flush(struct ring_buf *b, bool dying, uint64_t lost0)
{
	const uint32_t ps = b->page_size;
	uint32_t nest = __atomic_load_n(&b->nest, __ATOMIC_ACQUIRE);
	uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_ACQUIRE);
	uint64_t cur = off >> b->page_shift, first = b->consumed, vp, lost = 0, cw;
	int fd = -1;
	if (cur + 1 > b->pages && first < cur + 1 - b->pages)
		first = cur + 1 - b->pages; /* overwrite mode: the oldest still there */
	if (cfg_overwrite && nest && !dying) {
		/* Each event in flight may still switch once, reusing the oldest
		 * (not the dying thread's: they stay where they are). */
		uint64_t keep = nest < b->pages ? b->pages - nest : 0;
		for (; first <= cur && cur + 1 - first > keep; first++)
			lost += emerg_events(b, first, cur);
	}
	for (vp = first; vp <= cur; vp++) {
		const uint8_t *page = page_addr(b, vp);
		/* The current page is complete only once left (see emerg_tail). */
		if (page_complete(b, vp, &cw) &&
		    (vp < cur ||
		     (__atomic_load_n(&b->offset, __ATOMIC_ACQUIRE) >> b->page_shift) > vp)) {
			size_t len = page_len(b, (uint8_t *)page);
			if (len)
				emerg_packet(b, &fd, page, len, cw >> 32, false, lost0);
			else
				lost += cw >> 32;
			continue;
		}
		uint64_t ev = 0, inflight = 0;
		uint32_t len = emerg_tail(b, vp, dying, &ev, &inflight);
		if (len == ps) { /* completed meanwhile */
			size_t whole = page_len(b, (uint8_t *)page);
			if (whole)
				emerg_packet(b, &fd, page, whole, ev, false, lost0);
			else
				lost += ev;
			continue;
		}
		if (len > RING_HDR_SIZE) {
			emerg_packet(b, &fd, page, len, ev, true, lost0);
		} else {
			lost += ev;
		}
		/* Nothing after a page left open can be proved whole. */
		for (vp++; vp <= cur; vp++)
			lost += emerg_events(b, vp, cur);
		lost += inflight;
	}
	if (fd >= 0)
		close(fd);
	b->lost_consumer += lost;
	__atomic_store_n(&b->consumed, cur + 1, __ATOMIC_RELEASE);
}

/* Take the buffers over from the consumer (see the diagram). */
static int emerg_take(pid_t me)
{
	uint64_t deadline = emerg_ns() + EMERG_WAIT_NS;
	bool wanted = false;
	for (;;) {
		uint32_t v = __atomic_load_n(&emerg_state, __ATOMIC_ACQUIRE);
		switch (v) {
		case EM_IDLE:
			if (__atomic_compare_exchange_n(&emerg_state, &v, EM_DYING, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return 0;
			break;
		case EM_CONSUMER:
			/* ring_shutdown's consumer_final, interrupted on this
			 * very thread: it cannot hand over. */
			if (__atomic_load_n(&emerg_owner, __ATOMIC_RELAXED) == me)
				return -EDEADLK;
			if (__atomic_compare_exchange_n(&emerg_state, &v, EM_WANT, false,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				wanted = true;
				ring_wake_force(); /* in case it waits in ring_quiesce */
			}
			break;
		case EM_WANT: {
			uint64_t now = emerg_ns();
			if (now >= deadline)
				return -ETIMEDOUT;
			uint64_t ns = deadline - now < 10000000 ? deadline - now : 10000000;
			struct timespec ts = {0, (long)ns};
			sys_futex(&emerg_state, FUTEX_WAIT_PRIVATE, EM_WANT, &ts);
			break;
		}
		default:
			return wanted ? 0 : -EALREADY;
		}
	}
}

int ring_emergency_flush(int sig)
{
	pid_t me = sys_gettid();
	if ((pid_t)syscall(SYS_getpid) != __atomic_load_n(&emerg_pid, __ATOMIC_ACQUIRE))
		return -ESRCH; /* a vfork child (the buffers are its parent's), or not started */
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_OFF || !ring_disk)
		return -ENODATA;
	pid_t zero = 0;
	if (!__atomic_compare_exchange_n(&emerg_by, &zero, me, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		emerg_wait_done(); /* another thread flushes: its end is ours */
		return -EALREADY;
	}
	int err = emerg_take(me);
	struct ring_buf *b, *head;
	if (err != -EALREADY) {
		/* Stop every writer: new buffers start stopped (buf_create's
		 * Dekker), then a full barrier on every thread. */
		__atomic_store_n(&ring_state, RING_STOPPING, __ATOMIC_SEQ_CST);
		head = __atomic_load_n(&ring_head, __ATOMIC_SEQ_CST);
		size_t i = 0;
		for (b = head; b; b = b->next, i++) {
			/* losses up to here: the refusals stop causes are not */
			if (i < EMERG_SNAP)
				emerg_lost0[i] = __atomic_load_n(&b->lost, __ATOMIC_RELAXED);
			__atomic_fetch_or(&b->stop, RING_STOP, __ATOMIC_SEQ_CST);
		}
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
			full_fence();
		i = 0;
		for (b = head; b; b = b->next, i++) {
			uint64_t lost0 = i < EMERG_SNAP
					     ? emerg_lost0[i]
					     : __atomic_load_n(&b->lost, __ATOMIC_RELAXED);
			if (__atomic_load_n(&b->gone, __ATOMIC_ACQUIRE))
				continue; /* written and reported by the consumer */
			if (!err) {
				emerg_buf_flush(b, b == ring_tls, lost0);
			} else {
				/* No hand-over: every buffered event is lost. */
				uint64_t lost = __atomic_load_n(&b->nest, __ATOMIC_RELAXED);
				uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_ACQUIRE);
				uint64_t cur = off >> b->page_shift, vp = b->consumed;
				if (cur + 1 > b->pages && vp < cur + 1 - b->pages)
					vp = cur + 1 - b->pages;
				for (; vp <= cur; vp++)
					lost += emerg_events(b, vp, cur);
				b->lost_consumer += lost;
			}
			emerg_lost_line(b, lost0);
		}
		char line[96], *p = line, *end = line + sizeof(line);
		if (emerg_cat(&p, end, "signal: ") &&
		    (image_key[0] ? emerg_cat(&p, end, image_key)
				  : emerg_cat_u64(&p, end, (uint64_t)emerg_pid)) &&
		    emerg_cat(&p, end, " ") && emerg_cat_u64(&p, end, (uint64_t)me) &&
		    emerg_cat(&p, end, " ") && emerg_cat_u64(&p, end, (uint64_t)sig) &&
		    emerg_cat(&p, end, "\n"))
			emerg_info_line(line, (size_t)(p - line));
	}
	void (*hook)(int) = __atomic_load_n(&ring_fatal_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(sig);
	__atomic_store_n(&emerg_done, 1, __ATOMIC_RELEASE);
	sys_futex(&emerg_done, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
	return err;
}
