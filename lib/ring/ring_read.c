/* SPDX-License-Identifier: MIT */
/*
 * ring_read.c - the buffers' other readers: live control's `trace` (a
 * snapshot that consumes nothing) and `trace_pipe` (a stream that each
 * reader consumes for itself). The consumer thread, which writes the
 * buffers to disk, is ring.c's. API: ring.h.
 *
 * 1. A cursor per reader and buffer; copy, then check
 * ---------------------------------------------------
 * A reader never holds a writer back: in overwrite mode (a ring without a
 * session directory, or the flight recorder) the writer reuses its oldest
 * page whatever the readers do, in no-overwrite mode as soon as the
 * consumer has written it. So a reader copies an event out of page vp and
 * then checks that the writer has not begun to reuse the page's slot:
 *
 *   writer (ring.c, ring_switch)              reader (cur_copy)
 *   cmpxchg offset into page vp + pages       copy the event from page vp
 *   release fence                             acquire fence
 *   retire the slot's old lap, write into it  offset still below page vp + pages?
 *
 * A reader that copied any byte of the new lap sees the offset that began
 * it (fence to fence), so its check fails and the copy is dropped: a torn
 * event is never returned. Nothing is written to a slot before the offset
 * has moved into its new lap (a signal handler's event that slips in right
 * after the cmpxchg comes after it on the same thread).
 *
 * Which bytes of page vp are events:
 *   - the page's packet header must name vp (PKT_SEQ). The writer writes it
 *     after retiring the old lap's commit word (a release fence between),
 *     so the commit word read after it is this lap's (cur_enter);
 *   - a complete page (committed bytes == page size): up to its
 *     content_size;
 *   - the page being written: up to the offset, when the commit word
 *     equals it and the offset did not move around that read (no event in
 *     flight below it). Else an event is in flight: trace_pipe waits for
 *     its next look, a snapshot looks again for a while (cur_extent).
 * The first event of a page has the extended header, so a cursor decodes
 * compact timestamps from the page's start on.
 *
 * 2. Losses
 * ---------
 * ring_buf.retired counts the pages whose slot was reused and their events
 * in one word (one add per page switch, ring.c). Read between two loads of
 * an unchanged offset, with a page count that matches the offset (no
 * retirement under way: the count is the number of switches past the
 * first lap), it gives the oldest page still there, base, and E(base), the
 * events before it (buf_base). A cursor keeps E for its own position (ev),
 * so when its page is gone it reports E(base) - ev lost events and goes on
 * at base. Events below the clear position (`echo > trace`) are no loss.
 *
 * 3. Concurrency
 * --------------
 * | what                       | written by                    | read by                    |
 * |----------------------------|-------------------------------|----------------------------|
 * | page bytes, packet header  | owner                         | readers: copy, then check  |
 * | offset, commit[], retired, | owner (ring.c)                | readers (acquire)          |
 * |   plug_pos                 |                               |                            |
 * | the list                   | pushers (CAS); the consumer   | readers (read_lock)        |
 * |                            | unlinks (list_lock+read_lock) |                            |
 * | refs                       | readers (read_lock)           | consumer (read_lock)       |
 * | gone                       | consumer (release)            | readers (acquire)          |
 * | clear_*, pipe_read, comm   | readers (atomic)              | readers; consumer (clear)  |
 * | struct ring_cursor         | its reader                    | its reader                 |
 *
 * Readers are serialized by their caller (live control's thread). Under
 * TSan this file is not instrumented (Makefile): its copies race with the
 * writers by design, and are checked as above. So it calls no function of
 * an instrumented file on a buffer: TSan, not seeing this file's acquire
 * loads, would see races there that are none.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "ring.h"
#include "ring_fast.h"
#include "ring_int.h"

#define RD_SPIN_NS 5000000ull /* a snapshot waits this long for an event in flight */

static inline uint64_t ld_acq(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Page VP (ring.c's page_addr: here too, so that nothing of a reader's
 * runs instrumented under TSan, see the end of the header). */
static const uint8_t *rd_page(const struct ring_buf *b, uint64_t vp)
{
	return b->data + ((vp << b->page_shift) & b->buf_mask);
}

/* Copy N bytes from a page a writer may be changing. Byte by byte, and no
 * libc call: a sanitizer intercepting memcpy would check what this file's
 * copies do by design. */
static void rd_copy(void *dst, const uint8_t *src, size_t n)
{
	uint8_t *d = dst;
	for (size_t i = 0; i < n; i++)
		d[i] = __atomic_load_n(src + i, __ATOMIC_RELAXED);
}

/* A field of page VP's packet header, as it is now (may be changing). */
static uint64_t page_u64(struct ring_buf *b, uint64_t vp, size_t at)
{
	uint64_t v;
	rd_copy(&v, rd_page(b, vp) + at, 8);
	return v;
}

/* Has the writer begun to reuse page VP's slot? After a copy from it. */
static bool page_reused(struct ring_buf *b, uint64_t vp)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_RELAXED);
	return (off >> b->page_shift) >= vp + b->pages;
}

/*
 * B's oldest page still there (*BASE), the page being written (*CUR) and
 * the events before *BASE (*EV), from one consistent look (section 2).
 * -EAGAIN: the writer is between a page switch and its retirement.
 */
static int buf_base(struct ring_buf *b, uint64_t *base, uint64_t *cur, uint64_t *ev)
{
	uint64_t off = ld_acq(&b->offset);
	uint64_t w = ld_acq(&b->retired);
	uint64_t off2 = ld_acq(&b->offset);
	uint64_t c = off >> b->page_shift, r = c + 1 > b->pages ? c + 1 - b->pages : 0;
	if ((off2 >> b->page_shift) != c || (w >> 60) != (r & 15))
		return -EAGAIN;
	*base = r;
	*cur = c;
	*ev = w & RING_RETIRED_EVENTS;
	return 0;
}

/* Where the writer is, a plugged page's end unplugged (ring.c). */
static uint64_t buf_offset(struct ring_buf *b)
{
	uint64_t off = ld_acq(&b->offset), pm = b->page_size - 1;
	if ((off & pm) == pm)
		off = (off & ~pm) + __atomic_load_n(&b->plug_pos, __ATOMIC_ACQUIRE);
	return off;
}

/* Every event of B, overwritten or not (approximate while it is written). */
static uint64_t buf_total(struct ring_buf *b, uint64_t *base_out, uint64_t *cur_out)
{
	uint64_t base, cur, ev;
	for (int i = 0; buf_base(b, &base, &cur, &ev); i++) {
		if (i == 100) { /* a writer parked mid-switch: about right */
			cur = ld_acq(&b->offset) >> b->page_shift;
			base = cur + 1 > b->pages ? cur + 1 - b->pages : 0;
			ev = ld_acq(&b->retired) & RING_RETIRED_EVENTS;
			break;
		}
	}
	for (uint64_t vp = base; vp <= cur; vp++)
		ev += ld_acq(&b->commit[vp & (b->pages - 1)]) >> 32;
	if (base_out)
		*base_out = base;
	if (cur_out)
		*cur_out = cur;
	return ev;
}

/* B's events now after its clear, written since the clear, bytes held
 * (approximate: the writer goes on). */
static void buf_counts(struct ring_buf *b, uint64_t *in, uint64_t *written, uint64_t *bytes)
{
	uint64_t base, cur, held = 0, inb = 0;
	uint64_t total = buf_total(b, &base, &cur);
	uint64_t clr = __atomic_load_n(&b->clear_off, __ATOMIC_RELAXED);
	uint64_t clr_ev = __atomic_load_n(&b->clear_ev, __ATOMIC_RELAXED);
	for (uint64_t vp = base; vp <= cur; vp++) {
		uint64_t cw = ld_acq(&b->commit[vp & (b->pages - 1)]);
		if (((vp + 1) << b->page_shift) > clr) {
			held += cw >> 32;
			inb += (uint32_t)cw;
		}
	}
	*written = total > clr_ev ? total - clr_ev : 0;
	*in = held < *written ? held : *written;
	*bytes = inb;
}

void ring_counts(uint64_t *in_buffer, uint64_t *written)
{
	uint64_t in = 0, wr = 0;
	pthread_mutex_lock(&read_lock);
	for (struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		uint64_t i, w, bytes;
		buf_counts(b, &i, &w, &bytes);
		in += i;
		wr += w;
	}
	pthread_mutex_unlock(&read_lock);
	*in_buffer = in;
	*written = wr;
}

void ring_clear_all(void)
{
	pthread_mutex_lock(&read_lock);
	for (struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		uint64_t off = buf_offset(b);
		__atomic_store_n(&b->clear_ev, buf_total(b, NULL, NULL), __ATOMIC_RELAXED);
		__atomic_store_n(&b->clear_off, off, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&read_lock);
}

/* ---- buffers --------------------------------------------------------------- */

int ring_for_each_thread(void (*cb)(const struct ring_thread_stats *st, void *data), void *data)
{
	int n = 0;
	pthread_mutex_lock(&list_lock); /* the consumer's fields */
	for (struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		struct ring_thread_stats st = {
		    .tid = b->tid,
		    .exited = (int)__atomic_load_n(&b->gone, __ATOMIC_ACQUIRE),
		    .events = b->events_written,
		    .lost = buf_total_lost(b),
		    .bytes = b->file_bytes,
		    .overrun = __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED),
		    .read = __atomic_load_n(&b->pipe_read, __ATOMIC_RELAXED),
		};
		buf_counts(b, &st.entries, &st.written, &st.in_bytes);
		if (cb)
			cb(&st, data);
		n++;
	}
	pthread_mutex_unlock(&list_lock);
	return n;
}

void ring_for_each_buf(void (*cb)(struct ring_buf *b, void *data), void *data)
{
	pthread_mutex_lock(&read_lock);
	for (struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next)
		cb(b, data);
	pthread_mutex_unlock(&read_lock);
}

void ring_buf_get(struct ring_buf *b)
{
	__atomic_fetch_add(&b->refs, 1, __ATOMIC_RELAXED);
}

unsigned long ring_reader_gen(void)
{
	return ring_fork_gen;
}

void ring_buf_put(struct ring_buf *b, unsigned long gen)
{
	if (gen != ring_fork_gen)
		return; /* the parent's buffer: not mapped in this child */
	pthread_mutex_lock(&read_lock);
	__atomic_fetch_sub(&b->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&read_lock);
}

pid_t ring_buf_tid(const struct ring_buf *b)
{
	return b->tid;
}

void ring_buf_comm(struct ring_buf *b, char *out, size_t n)
{
	char path[64], name[sizeof(b->comm)];
	if (b->comm[0])
		goto out;
	ssize_t r = -1;
	if (!__atomic_load_n(&b->gone, __ATOMIC_ACQUIRE)) {
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)b->tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			r = read(fd, name, sizeof(name) - 1);
			close(fd);
		}
	}
	if (r <= 0)
		r = snprintf(name, sizeof(name), "<...>");
	name[r] = 0;
	for (ssize_t i = 0; i <= r; i++) /* not libc: see rd_copy */
		b->comm[i] = name[i] == '\n' ? 0 : name[i];
out:;
	size_t i = 0;
	for (; i + 1 < n && i < sizeof(b->comm) && b->comm[i]; i++)
		out[i] = b->comm[i];
	if (n)
		out[i] = 0;
}

uint64_t ring_buf_serial(const struct ring_buf *b)
{
	return b->serial;
}

bool ring_buf_drained(struct ring_buf *b)
{
	return __atomic_load_n(&b->gone, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&b->clear_off, __ATOMIC_RELAXED) >= buf_offset(b);
}

/* ---- cursors --------------------------------------------------------------- */

/* Events below this offset are not shown: cleared. */
static uint64_t cur_skip(const struct ring_cursor *c)
{
	return __atomic_load_n(&c->b->clear_off, __ATOMIC_RELAXED);
}

static void cur_page(struct ring_cursor *c, uint64_t vp)
{
	c->vp = vp;
	c->pos = c->avail = RING_HDR_SIZE;
	c->page_ev = c->pev = 0;
	c->entered = c->complete = c->bad = 0;
	c->ts = 0;
}

/* Check (and move to, if it is gone) C's page: 0, or -EAGAIN while the
 * writer is between two states there (look again). */
static int cur_enter(struct ring_cursor *c)
{
	struct ring_buf *b = c->b;
	uint64_t base, cur, ev;
	if (buf_base(b, &base, &cur, &ev))
		return -EAGAIN;
	/* Placed the first time; or the buffer started over (ring_init: its
	 * offsets begin again); or its page was reused before we read all of
	 * it: what we missed is lost, unless it was cleared. */
	if (c->fresh || c->vp > cur || c->vp < base) {
		if (!c->fresh && c->vp < base && ev > c->ev &&
		    (base << b->page_shift) > cur_skip(c))
			c->lost += ev - c->ev;
		/* a buffer made after the reader began: every event was its */
		uint64_t clr_ev = __atomic_load_n(&b->clear_ev, __ATOMIC_RELAXED);
		if (c->fresh && c->whole && ev > clr_ev && (base << b->page_shift) > cur_skip(c))
			c->lost += ev - clr_ev;
		c->fresh = 0;
		cur_page(c, base);
		c->ev = ev;
	}
	if (page_u64(b, c->vp, PKT_SEQ) != c->vp)
		return -EAGAIN; /* the writer is opening the page */
	c->entered = 1;
	return 0;
}

/* How much of C's page holds whole events (section 1). -1: the page is
 * being reused (nothing changed). */
static int cur_extent(struct ring_cursor *c)
{
	struct ring_buf *b = c->b;
	uint64_t *cwp = &b->commit[c->vp & (b->pages - 1)];
	uint64_t cw = ld_acq(cwp);
	if ((uint32_t)cw == b->page_size) {
		/* Complete: its size and count, if they are still this lap's
		 * (the slot may have had a whole new lap meanwhile). */
		uint64_t bits = page_u64(b, c->vp, PKT_CONTENT_SIZE);
		if (page_reused(b, c->vp))
			return -1;
		if (bits % 8 == 0 && bits / 8 >= RING_HDR_SIZE && bits / 8 <= b->page_size &&
		    bits / 8 >= c->pos) {
			c->avail = (uint32_t)(bits / 8);
			c->page_ev = (uint32_t)(cw >> 32);
			c->complete = 1;
		}
		return 0;
	}
	uint64_t off = ld_acq(&b->offset), pm = b->page_size - 1;
	if ((off >> b->page_shift) != c->vp)
		return 0; /* being closed, or an event in flight: look again */
	uint64_t pos = off & pm;
	if (pos == pm)
		pos = __atomic_load_n(&b->plug_pos, __ATOMIC_ACQUIRE);
	cw = ld_acq(cwp);
	if (ld_acq(&b->offset) == off && (uint32_t)cw == pos && pos > c->avail)
		c->avail = (uint32_t)pos;
	return 0;
}

/*
 * Copy the event at C's position into *E and check the page (section 1).
 * 1: done (C moved past it); 0: the page is being reused (nothing done);
 * -1: the bytes are not an event (the page is skipped).
 */
static int cur_copy(struct ring_cursor *c, struct ring_event *e)
{
	struct ring_buf *b = c->b;
	const uint8_t *p = rd_page(b, c->vp) + c->pos;
	uint32_t room = c->avail - c->pos, id = 0, hdr = 0, len = 0;
	uint64_t ts = 0;
	uint8_t h[FMT_EXT_HDR];
	uint32_t hn = room < sizeof(h) ? room : (uint32_t)sizeof(h);
	bool ok = false;
	rd_copy(h, p, hn);
	if (!fmt_header(h, hn, &id, &ts, &hdr)) {
		uint32_t max = room - hdr < RING_PAYLOAD_MAX ? room - hdr : RING_PAYLOAD_MAX;
		int fixed = fmt_payload_fixed(id);
		if (fixed >= 0) {
			len = (uint32_t)fixed;
			ok = len <= max;
			if (ok)
				rd_copy(e->payload, p + hdr, len);
		} else if (id == FMT_EV_MARKER) {
			rd_copy(e->payload, p + hdr, max);
			const uint8_t *z = memchr(e->payload, 0, max);
			ok = z != NULL;
			len = ok ? (uint32_t)(z - e->payload) + 1 : 0;
		} else if (id == FMT_EV_TRACEPOINT || id == FMT_EV_ENTRY_ARGS ||
			   id == FMT_EV_EXIT_RETVAL) {
			/* a length field first: at most 6 bytes, then the rest */
			uint32_t first = max < 6 ? max : 6;
			rd_copy(e->payload, p + hdr, first);
			int64_t n = fmt_payload_len(id, e->payload, max);
			ok = n >= 0;
			len = ok ? (uint32_t)n : 0;
			if (ok && len > first)
				rd_copy(e->payload + first, p + hdr + first, len - first);
		}
	}
	if (page_reused(b, c->vp))
		return 0;
	if (hdr == FMT_COMPACT_HDR) {
		/* Extend from the previous event (the page's first has the
		 * extended header). */
		uint64_t t = (c->ts & ~(uint64_t)(FMT_TS_WRAP - 1)) | ts;
		if (t < c->ts)
			t += FMT_TS_WRAP;
		ts = t;
		ok = ok && c->ts;
	}
	if (!ok)
		return -1;
	e->id = id;
	e->ts = ts;
	e->len = len;
	e->off = (c->vp << b->page_shift) + c->pos;
	c->ts = ts;
	c->pos += hdr + len;
	if (id == FMT_EV_ENTRY16) {
		/* readers see one entry: the 32-bit id */
		uint16_t h;
		memcpy(&h, e->payload, 2);
		uint32_t func = h;
		memcpy(e->payload, &func, 4);
		e->id = FMT_EV_ENTRY;
		e->len = 4;
	}
	c->pev++;
	c->ev++;
	return 1;
}

void ring_cursor_open(struct ring_cursor *c, struct ring_buf *b, int pipe)
{
	memset(c, 0, sizeof(*c));
	c->b = b;
	c->pipe = pipe != 0;
	c->fresh = 1;
	c->end = pipe ? UINT64_MAX : buf_offset(b);
}

int ring_cursor_next(struct ring_cursor *c, struct ring_event *e)
{
	struct ring_buf *b = c->b;
	uint64_t spin_from = 0;
	for (;;) {
		if (!c->entered && cur_enter(c))
			goto wait;
		if ((c->vp << b->page_shift) + c->pos >= c->end)
			return RING_RD_END;
		if (!c->complete && (c->bad || c->pos >= c->avail)) {
			/* Gone first: then the extent below is final. */
			bool gone = __atomic_load_n(&b->gone, __ATOMIC_ACQUIRE);
			if (cur_extent(c)) {
				c->entered = 0; /* lapped while we waited */
				continue;
			}
			if (!c->complete && (c->bad || c->pos >= c->avail)) {
				if (page_reused(b, c->vp)) {
					c->entered = 0;
					continue;
				}
				if (gone)
					return RING_RD_END;
				goto wait; /* an event in flight; a bad page: until complete */
			}
		}
		if (c->pos >= c->avail || c->bad) {
			/* Done with a complete page. Its count is the truth. */
			if (c->bad)
				c->lost += c->page_ev > c->pev ? c->page_ev - c->pev : 0;
			if (c->page_ev > c->pev)
				c->ev += c->page_ev - c->pev;
			cur_page(c, c->vp + 1);
			continue;
		}
		/* A whole page below the skip point: counted, not decoded. */
		if (c->complete && c->pos == RING_HDR_SIZE &&
		    ((c->vp + 1) << b->page_shift) <= cur_skip(c)) {
			if (page_reused(b, c->vp)) {
				c->entered = 0;
				continue;
			}
			c->ev += c->page_ev;
			cur_page(c, c->vp + 1);
			continue;
		}
		int r = cur_copy(c, e);
		if (r == 0) {
			c->entered = 0; /* reused: cur_enter counts what is lost */
			continue;
		}
		if (r < 0) {
			c->bad = 1;
			continue;
		}
		spin_from = 0;
		if (e->off < cur_skip(c))
			continue;
		if (c->pipe)
			__atomic_fetch_add(&b->pipe_read, 1, __ATOMIC_RELAXED);
		return RING_RD_EVENT;
	wait:
		if (c->pipe)
			return RING_RD_NONE;
		/* A snapshot: the writer is inside an event or a page switch,
		 * which takes a few instructions, unless it was preempted there. */
		if (!spin_from)
			spin_from = clock_mono_ns();
		else if (clock_mono_ns() - spin_from > RD_SPIN_NS)
			return RING_RD_END;
		sched_yield();
	}
}
