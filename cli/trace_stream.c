// SPDX-License-Identifier: MIT
/*
 * trace_stream.c - decoding one stream of a session. See trace_stream.h for
 * the contract and lib/ring/format.h (docs/FORMAT.md) for the layout.
 *
 * A stream file is a sequence of packets (one per ring-buffer page):
 *
 *   offset 0                24                          80         content  packet
 *   +--------+------+------+---------------------------+--------...+--...--+
 *   | magic  | uuid | sid  | ts_begin ts_end content   | events    | pad   |
 *   | u32    | 16   | u32  | packet disc seq pid tid   |           |       |
 *   +--------+------+------+---------------------------+--------...+--...--+
 *
 * Each event starts with a 16-bit compact header: id in bits 0-2 and the low
 * 13 bits of the time in bits 3-15. Id 7 means extended: then the 3-bit field
 * is followed, from the next byte, by uint32 id and uint64 time (13 bytes of
 * header). A compact time is extended from the previous time of the stream
 * (the packet's timestamp_begin for its first event): the same high bits,
 * plus one wrap of 8192 ns when the low bits are smaller than before.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"
#include "trace_stream.h"

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- streams ---------------------------------------------------------- */

void tr_stream_rewind(struct tr_stream *st)
{
	st->xpos = 0;
	st->pkt = st->pkt_content = st->pkt_next = st->pos = st->released = 0;
	st->in_packet = st->done = st->ended = st->failed = 0;
	st->prev_ts = st->last_ts = st->discarded = st->seq = 0;
	st->inherit_pos = 0;
	st->have_packet = 0;
	st->err[0] = 0;
	st->nevents = st->ncalls = st->nlost = st->npackets = 0;
	st->first_ts = 0;
	st->have_first = 0;
}

static int calls_expand(struct tr_stream *st);

void tr_stream_fork(const struct tr_stream *st, struct tr_stream *cur)
{
	/* A -t stream's expansion is made once, by the original (tr_close
	 * frees it), and shared: a fork never makes its own. */
	if (st->sess && st->sess->info.time_filter_ns && !st->xev)
		calls_expand((struct tr_stream *)st);
	*cur = *st;
	tr_stream_rewind(cur);
	cur->complete = 0;
}

static void stream_fail(struct tr_stream *st, uint64_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void stream_fail(struct tr_stream *st, uint64_t off, const char *fmt, ...)
{
	char what[TR_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	tr_set_err(st->err, "%s: %s at offset %" PRIu64, st->path, what, off);
	st->failed = 1;
	st->fail_off = off;
	st->ended = 1;
}

/*
 * Give back the mapped pages of ST below offset OFF, in steps of
 * RELEASE_STEP at least: a cursor only moves forward, so reading a stream
 * holds a few pages of it instead of the whole file (the views read
 * streams larger than the memory they should take). The mapping is
 * private and never written: a page given back is read again from the
 * page cache if touched (after a rewind, a second cursor, or the text of
 * an event just delivered), with the same bytes.
 */
#define RELEASE_STEP (256u << 10)

static void release_below(struct tr_stream *st, uint64_t off)
{
	static uint64_t page;
	uint64_t end;

	if (!page) {
		long p = sysconf(_SC_PAGESIZE);

		page = p > 0 ? (uint64_t)p : 4096;
	}
	end = off & ~(page - 1);
	if (end < st->released + RELEASE_STEP)
		return;
	madvise((void *)(st->data + st->released), (size_t)(end - st->released), MADV_DONTNEED);
	st->released = end;
}

/* Enter the packet at st->pkt_next. 1: entered (maybe with a DISCARDED event
 * in EV), 0: end of file, -1: damage. */
static int enter_packet(struct tr_stream *st, struct tr_event *ev, int *have_ev)
{
	const struct tr_session *s = st->sess;
	uint64_t off = st->pkt_next, left = st->size - off;
	const uint8_t *p;
	uint64_t tsb, tse, content, psize, disc, seq;
	uint32_t pid, tid, magic;

	*have_ev = 0;
	if (!left)
		return 0;
	p = st->data + off;
	if (left < TR_HEADER_BYTES) {
		stream_fail(st, off, "truncated packet header (%" PRIu64 " of %d bytes)", left,
			    TR_HEADER_BYTES);
		return -1;
	}
	magic = le32(p);
	if (magic != TR_PACKET_MAGIC) {
		stream_fail(st, off, "bad packet magic 0x%08" PRIx32, magic);
		return -1;
	}
	if (s->has_uuid && memcmp(p + 4, s->uuid, 16)) {
		stream_fail(st, off + 4, "packet uuid differs from the metadata's");
		return -1;
	}
	if (le32(p + 20)) {
		stream_fail(st, off + 20, "unknown stream id %" PRIu32, le32(p + 20));
		return -1;
	}
	tsb = le64(p + 24);
	tse = le64(p + 32);
	content = le64(p + 40);
	psize = le64(p + 48);
	disc = le64(p + 56);
	seq = le64(p + 64);
	pid = le32(p + 72);
	tid = le32(p + 76);
	if (psize % 8 || psize / 8 < TR_HEADER_BYTES) {
		stream_fail(st, off + 48, "bad packet_size of %" PRIu64 " bits", psize);
		return -1;
	}
	if (psize / 8 > left) {
		stream_fail(st, off,
			    "truncated packet (%" PRIu64 " bytes of %" PRIu64 " are in the file)",
			    left, psize / 8);
		return -1;
	}
	if (content % 8 || content > psize || content / 8 < TR_HEADER_BYTES) {
		stream_fail(st, off + 40,
			    "bad content_size of %" PRIu64 " bits (packet_size %" PRIu64 ")",
			    content, psize);
		return -1;
	}
	if (pid != (uint32_t)st->pid || tid != (uint32_t)st->tid) {
		stream_fail(st, off + 72,
			    "packet of pid %" PRIu32 " tid %" PRIu32
			    " in the stream of pid %d tid %d",
			    pid, tid, (int)st->pid, (int)st->tid);
		return -1;
	}
	if (st->have_packet && seq <= st->seq) {
		stream_fail(st, off + 64, "packet sequence number %" PRIu64 " after %" PRIu64, seq,
			    st->seq);
		return -1;
	}
	if (disc < st->discarded) {
		stream_fail(st, off + 56, "events_discarded goes down from %" PRIu64 " to %" PRIu64,
			    st->discarded, disc);
		return -1;
	}
	if (tsb > tse) {
		stream_fail(st, off + 24, "timestamp_begin is after timestamp_end");
		return -1;
	}
	if (tsb < st->last_ts) {
		stream_fail(st, off + 24, "timestamp_begin goes back before the previous event");
		return -1;
	}
	st->have_packet = 1;
	st->seq = seq;
	st->pkt = off;
	release_below(st, off);
	st->pkt_content = off + content / 8;
	st->pkt_next = off + psize / 8;
	st->pos = off + TR_HEADER_BYTES;
	st->prev_ts = tsb;
	st->in_packet = 1;
	st->npackets++;
	if (disc > st->discarded) {
		memset(ev, 0, sizeof(*ev));
		ev->type = TR_DISCARDED;
		ev->arg = disc - st->discarded;
		ev->ts = tsb;
		ev->off = off + 56;
		st->discarded = disc;
		st->last_ts = tsb;
		*have_ev = 1;
	}
	return 1;
}

static int need(struct tr_stream *st, uint64_t ev_off, uint64_t at, uint64_t n)
{
	if (at + n > st->pkt_content) {
		stream_fail(st, ev_off, "event runs past the packet's content");
		return -1;
	}
	return 0;
}

static int check_func(struct tr_stream *st, uint64_t ev_off, uint32_t func)
{
	if (!tr_site(st->proc, func)) {
		stream_fail(st, ev_off, "unknown function id %" PRIu32, func);
		return -1;
	}
	return 0;
}

/* Decode the event at st->pos. 1 or -1. */
static int decode_event(struct tr_stream *st, struct tr_event *ev)
{
	uint64_t off = st->pos, at;
	const uint8_t *p = st->data + off;
	uint32_t id;
	uint64_t ts;

	memset(ev, 0, sizeof(*ev));
	ev->off = off;
	uint32_t hdr;

	if (need(st, off, off, FMT_COMPACT_HDR))
		return -1;
	if ((p[0] & 7) == FMT_EXT_TAG && need(st, off, off, FMT_EXT_HDR))
		return -1;
	if (fmt_header(p, (size_t)(st->pkt_content - off), &id, &ts, &hdr) < 0) {
		stream_fail(st, off, "malformed event header");
		return -1;
	}
	if (hdr == FMT_EXT_HDR) {
		if (ts < st->prev_ts) {
			stream_fail(st, off, "timestamp goes backwards");
			return -1;
		}
	} else {
		ts |= st->prev_ts & ~(uint64_t)(FMT_TS_WRAP - 1);
		if (ts < st->prev_ts)
			ts += FMT_TS_WRAP;
	}
	at = off + hdr;
	p = st->data + at;
	ev->type = (int)id;
	ev->ts = ts;
	switch (id) {
	case TR_ENTRY:
		if (need(st, off, at, 4))
			return -1;
		ev->func = le32(p);
		if (check_func(st, off, ev->func))
			return -1;
		at += 4;
		break;
	case FMT_EV_ENTRY16:
		if (need(st, off, at, 2))
			return -1;
		ev->func = le16(p);
		if (check_func(st, off, ev->func))
			return -1;
		ev->type = id = TR_ENTRY;
		at += 2;
		break;
	case TR_EXIT:
		break;
	case FMT_EV_ENTRY_ARGS:
	case FMT_EV_EXIT_RETVAL: {
		/* an entry or exit carrying values (format.h) */
		int ent = id == FMT_EV_ENTRY_ARGS;
		if (need(st, off, at, ent ? 6 : 2))
			return -1;
		if (ent) {
			ev->func = le32(p);
			if (check_func(st, off, ev->func))
				return -1;
		}
		ev->nvals = le16(p + (ent ? 4 : 0));
		at += ent ? 6 : 2;
		if (need(st, off, at, ev->nvals))
			return -1;
		ev->vals = st->data + at;
		if (!fmt_args_valid(ev->vals, ev->nvals)) {
			stream_fail(st, off, "malformed %s values",
				    ent ? "argument" : "return value");
			return -1;
		}
		at += ev->nvals;
		ev->type = id = ent ? TR_ENTRY : TR_EXIT;
		break;
	}
	case TR_FUNCTION:
	case TR_CALL:
		if (need(st, off, at, 12))
			return -1;
		ev->func = le32(p);
		ev->arg = le64(p + 4);
		if (check_func(st, off, ev->func))
			return -1;
		if (id == TR_CALL && ev->arg > ts) {
			stream_fail(st, off, "call of %" PRIu64 " ns ends before it starts",
				    ev->arg);
			return -1;
		}
		at += 12;
		break;
	case FMT_EV_FUNCTION_NEAR: {
		/* A function event whose parent is an offset from the site. */
		int64_t poff;
		if (need(st, off, at, 6))
			return -1;
		fmt_near_unpack(p, &ev->func, &poff);
		if (check_func(st, off, ev->func))
			return -1;
		ev->type = id = TR_FUNCTION;
		ev->arg = tr_site(st->proc, ev->func)->addr + (uint64_t)poff;
		at += 6;
		break;
	}
	case TR_LOST:
	case TR_EXIT_DEPTH:
	case TR_EXIT_LOST:
		if (need(st, off, at, 4))
			return -1;
		ev->arg = le32(p);
		at += 4;
		break;
	case TR_CTX_SWITCH:
		if (need(st, off, at, 12))
			return -1;
		ev->arg = le32(p) | (uint64_t)le32(p + 4) << 32;
		ev->func = le32(p + 8);
		at += 12;
		break;
	case TR_TRACEPOINT:
		if (need(st, off, at, 4))
			return -1;
		ev->func = le16(p);
		ev->arg = le16(p + 2);
		if (need(st, off, at + 4, ev->arg))
			return -1;
		ev->text = (const char *)p + 4;
		at += 4 + ev->arg;
		break;
	case TR_MARKER: {
		const uint8_t *nul = memchr(p, 0, (size_t)(st->pkt_content - at));

		if (!nul) {
			stream_fail(st, off, "marker text runs past the packet's content");
			return -1;
		}
		ev->text = (const char *)p;
		at += (uint64_t)(nul - p) + 1;
		break;
	}
	default:
		stream_fail(st, off, "unknown event id %" PRIu32, id);
		return -1;
	}
	st->pos = at;
	st->prev_ts = ts;
	st->last_ts = ts;
	/* exit_lost stands for exits counted lost when they were dropped */
	st->nevents += id != TR_EXIT_LOST;
	if (id == TR_ENTRY || id == TR_FUNCTION || id == TR_CALL)
		st->ncalls++;
	if (id == TR_LOST)
		st->nlost += ev->arg;
	if (!st->have_first) {
		st->first_ts = ts;
		st->have_first = 1;
	}
	return 1;
}

static int raw_next(struct tr_stream *st, struct tr_event *ev)
{
	int have;

	if (st->done)
		return 0;
	/* A fork child's thread that forked starts inside its parent's open
	 * frames: they come first, as entries at the fork's time that carry
	 * their own (not counted: they are the parent's events). */
	if (st->tid == st->pid && st->inherit_pos < st->proc->ninherit && !st->have_packet &&
	    !st->gen) {
		const struct tr_inherit *in = &st->proc->inherit[st->inherit_pos++];

		memset(ev, 0, sizeof(*ev));
		ev->type = TR_ENTRY;
		ev->func = in->func;
		ev->ts = st->proc->fork_ns;
		ev->arg = in->ts;
		return 1;
	}
	if (!st->ended && st->pre_err[0] && !st->have_packet) {
		snprintf(st->err, sizeof(st->err), "%s", st->pre_err);
		st->failed = 1;
		st->ended = 1;
	}
	while (!st->ended) {
		if (!st->in_packet) {
			int r = enter_packet(st, ev, &have);

			if (r < 0)
				break;
			if (r == 0) {
				st->ended = 1;
				break;
			}
			if (have)
				return 1;
			continue;
		}
		if (st->pos >= st->pkt_content) {
			st->in_packet = 0;
			continue;
		}
		if (decode_event(st, ev) < 0)
			break;
		return 1;
	}
	memset(ev, 0, sizeof(*ev));
	ev->type = TR_END;
	ev->ts = st->last_ts;
	ev->off = st->failed ? 0 : st->size;
	st->done = 1;
	st->complete = 1;
	st->final_discarded = st->discarded;
	st->final_nlost = st->nlost;
	st->final_nevents = st->nevents;
	st->final_ncalls = st->ncalls;
	return 1;
}

/* ---- -t sessions: whole calls as entries and exits -------------------- */

struct xcall {
	uint64_t start, end;
	uint32_t func;
};

/* Calls by start, the outer of two that start together first. */
static int cmp_xcall(const void *a, const void *b)
{
	const struct xcall *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

static int xev_push(struct tr_event **v, size_t *n, size_t *cap, const struct tr_event *ev)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct tr_event *p = realloc(*v, c * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	(*v)[(*n)++] = *ev;
	return 0;
}

/*
 * A -t session writes each call that lasted long enough as one `call`
 * event at its end, children before their parent. Every view wants the
 * calls nested, parents first, as from entries and exits: read the whole
 * stream once, turn the calls into an entry at their start and an exit at
 * their end, ordered as a stack (one call lies within another when it
 * starts no earlier and ends no later: a thread's calls nest), and merge
 * them by time with the stream's other events, which keep their order.
 * The stream's counts are the raw decoder's.
 */
static int calls_expand(struct tr_stream *st)
{
	struct tr_event ev, *other = NULL, *out = NULL;
	struct xcall *calls = NULL, **stack = NULL;
	size_t nother = 0, cother = 0, ncalls = 0, ccalls = 0, nout = 0, cout = 0, depth = 0;
	int ret = 0;

	tr_stream_rewind(st);
	while (!ret && raw_next(st, &ev) > 0) {
		if (ev.type != TR_CALL) {
			ret = xev_push(&other, &nother, &cother, &ev);
			continue;
		}
		if (ncalls == ccalls) {
			size_t c = ccalls ? ccalls * 2 : 256;
			struct xcall *p = realloc(calls, c * sizeof(*p));

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			calls = p;
			ccalls = c;
		}
		calls[ncalls++] =
		    (struct xcall){ev.arg < ev.ts ? ev.ts - ev.arg : 0, ev.ts, ev.func};
	}
	if (!ret && ncalls)
		stack = malloc(ncalls * sizeof(*stack));
	if (!ret && ncalls && !stack)
		ret = -ENOMEM;
	if (ret)
		goto out;
	qsort(calls, ncalls, sizeof(*calls), cmp_xcall);
	/* The calls as entries and exits, merged by time with the other
	 * events (the calls' first at equal times; TR_END, the last of the
	 * others, last). */
	size_t oi = 0, ci = 0;
	uint64_t last = 0;
	for (;;) {
		struct tr_event x = {0};
		struct xcall *c = ci < ncalls ? &calls[ci] : NULL;

		/* the top call ends before C when C does not lie within it */
		if (depth && (!c || c->end > stack[depth - 1]->end)) {
			x.type = TR_EXIT;
			x.ts = stack[--depth]->end;
		} else if (c) {
			x.type = TR_ENTRY;
			x.func = c->func;
			x.ts = c->start;
			stack[depth++] = c;
			ci++;
		} else {
			break;
		}
		/* Calls that overlap without nesting (a call that started inside
		 * another and ended after it) cannot be drawn as they ran: time
		 * never goes back, so such a call starts where the other ended
		 * and lasts at least nothing. */
		if (x.ts < last)
			x.ts = last;
		while (oi < nother && other[oi].type != TR_END && other[oi].ts < x.ts)
			if ((ret = xev_push(&out, &nout, &cout, &other[oi++])))
				goto out;
		if ((ret = xev_push(&out, &nout, &cout, &x)))
			goto out;
		last = x.ts;
	}
	while (oi < nother && !ret)
		ret = xev_push(&out, &nout, &cout, &other[oi++]);
out:
	free(other);
	free(calls);
	free(stack);
	if (ret) {
		free(out);
		return ret;
	}
	st->xev = out;
	st->nxev = nout;
	st->xpos = 0;
	return 0;
}

int tr_stream_next(struct tr_stream *st, struct tr_event *ev)
{
	if (!st->sess || !st->sess->info.time_filter_ns)
		return raw_next(st, ev);
	if (!st->xev) {
		int r = calls_expand(st);

		if (r < 0) {
			if (!st->failed) {
				snprintf(st->err, sizeof(st->err), "%s: out of memory", st->path);
				st->failed = 1;
			}
			return raw_next(st, ev); /* the stream as written */
		}
	}
	if (st->xpos >= st->nxev)
		return 0;
	*ev = st->xev[st->xpos++];
	return 1;
}

int tr_stream_scan(struct tr_stream *st)
{
	struct tr_event ev;

	tr_stream_rewind(st);
	while (tr_stream_next(st, &ev) > 0)
		;
	return st->failed ? -EINVAL : 0;
}

/* ---- what the streams tell of the session ------------------------------- */

uint64_t tr_thread_lost(const struct tr_session *s, pid_t pid, pid_t tid)
{
	uint64_t info = 0, disc = 0, lost = 0;

	for (size_t i = 0; i < s->info.nlost; i++)
		if (s->info.lost[i].pid == pid && s->info.lost[i].tid == tid)
			info += s->info.lost[i].count;
	for (size_t i = 0; i < s->nstreams; i++) {
		const struct tr_stream *st = &s->streams[i];

		if (st->pid == pid && st->tid == tid && st->complete) {
			disc += st->final_discarded;
			lost += st->final_nlost;
		}
	}
	return (info > disc ? info : disc) + lost;
}

uint64_t tr_thread_overwritten(const struct tr_session *s, pid_t pid, pid_t tid)
{
	uint64_t n = 0, lost = tr_thread_lost(s, pid, tid);

	for (size_t i = 0; i < s->info.nlost; i++)
		if (s->info.lost[i].pid == pid && s->info.lost[i].tid == tid)
			n += s->info.lost[i].overwritten;
	return n < lost ? n : lost;
}

uint64_t tr_thread_dropped(const struct tr_session *s, pid_t pid, pid_t tid)
{
	uint64_t n = 0, lost = tr_thread_lost(s, pid, tid);

	for (size_t i = 0; i < s->info.nlost; i++)
		if (s->info.lost[i].pid == pid && s->info.lost[i].tid == tid)
			n += s->info.lost[i].dropped;
	return n < lost ? n : lost;
}

/* One thread's losses: what overwrite mode replaced by design apart. */
static void print_loss(const struct tr_session *s, FILE *out, const char *prefix, pid_t pid,
		       pid_t tid, uint64_t n)
{
	char num[40], onum[40];
	uint64_t over = tr_thread_overwritten(s, pid, tid);

	if (over == n)
		fprintf(
		    out,
		    "%sthread %d: %s older events overwritten (overwrite mode keeps the newest)\n",
		    prefix, (int)tid, cli_thousands(over, onum, sizeof(onum)));
	else if (over)
		fprintf(out, "%sthread %d lost %s events, and %s older ones were overwritten\n",
			prefix, (int)tid, cli_thousands(n - over, num, sizeof(num)),
			cli_thousands(over, onum, sizeof(onum)));
	else
		fprintf(out, "%sthread %d lost %s events\n", prefix, (int)tid,
			cli_thousands(n, num, sizeof(num)));
}

int tr_print_losses(struct tr_session *s, FILE *out, const char *prefix)
{
	int lines = 0;

	for (size_t i = 0; i < s->nstreams; i++)
		if (!s->streams[i].complete)
			tr_stream_scan(&s->streams[i]);
	/* Threads with a stream, then threads only named by "lost:" lines. */
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		uint64_t n;
		int dup = 0;

		for (size_t j = 0; j < i; j++)
			if (s->streams[j].pid == st->pid && s->streams[j].tid == st->tid)
				dup = 1;
		if (dup)
			continue;
		n = tr_thread_lost(s, st->pid, st->tid);
		if (n) {
			print_loss(s, out, prefix, st->pid, st->tid, n);
			lines++;
		}
	}
	for (size_t i = 0; i < s->info.nlost; i++) {
		struct tr_lost_line *l = &s->info.lost[i];
		int seen = 0;
		uint64_t n;

		for (size_t j = 0; j < s->nstreams; j++)
			if (s->streams[j].pid == l->pid && s->streams[j].tid == l->tid)
				seen = 1;
		for (size_t j = 0; j < i; j++)
			if (s->info.lost[j].pid == l->pid && s->info.lost[j].tid == l->tid)
				seen = 1;
		if (seen)
			continue;
		n = tr_thread_lost(s, l->pid, l->tid);
		if (n) {
			print_loss(s, out, prefix, l->pid, l->tid, n);
			lines++;
		}
	}
	lines += tr_print_unflushed(s, out, prefix);
	return lines;
}

uint64_t tr_base_ts(struct tr_session *s)
{
	uint64_t base = s->info.has_start ? s->info.start_ns : UINT64_MAX;

	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		struct tr_event ev;

		tr_stream_rewind(st);
		while (tr_stream_next(st, &ev) > 0) {
			if (ev.type == TR_END)
				break;
			if (ev.type == TR_DISCARDED)
				continue;
			if (ev.ts < base)
				base = ev.ts;
			break;
		}
		tr_stream_rewind(st);
	}
	return base == UINT64_MAX ? 0 : base;
}

/* ---- tracepoint events -------------------------------------------------- */

int tr_tracepoint_fields(struct tr_stream *st, const struct tr_event *ev, char *name,
			 size_t name_size, int (*fn)(const struct tr_tp_field *, void *),
			 void *data)
{
	const uint8_t *d = (const uint8_t *)ev->text;
	size_t n = (size_t)ev->arg, pos = 0;
	const char *desc, *c;
	int ret;

	desc = tr_tracepoint_desc(st->sess, st->proc, ev->func);
	if (!desc) {
		snprintf(name, name_size, "#%u", (unsigned)ev->func);
		return -ENOENT;
	}
	c = strchr(desc, ' ');
	snprintf(name, name_size, "%.*s", (int)(c ? (size_t)(c - desc) : strlen(desc)), desc);
	while (c && *c == ' ') {
		struct tr_tp_field f = {0};
		unsigned fsize = 0;
		int used = 0;

		if (sscanf(c + 1, "%c:%u:%127[^ ]%n", &f.kind, &fsize, f.name, &used) != 3)
			return -EINVAL;
		c += 1 + used;
		if (f.kind == 's') {
			const uint8_t *z = memchr(d + pos, 0, n - pos);

			if (!z)
				return -EINVAL;
			if (!(z - (d + pos) == 1 && d[pos] == 0xff))
				f.str = (const char *)d + pos;
			pos = (size_t)(z - d) + 1;
		} else {
			if (fsize == 0 || fsize > 8 || n - pos < fsize)
				return -EINVAL;
			for (unsigned i = 0; i < fsize; i++)
				f.u |= (uint64_t)d[pos + i] << (8 * i);
			pos += fsize;
			f.i = fsize < 8 && (f.u >> (8 * fsize - 1)) & 1
				  ? (int64_t)(f.u | ~(uint64_t)0 << (8 * fsize))
				  : (int64_t)f.u;
		}
		if ((ret = fn(&f, data)))
			return ret;
	}
	return pos == n ? 0 : -EINVAL;
}

struct tp_text {
	char *buf;
	size_t size, at;
	const char *name; /* written before the first field */
	int started;
};

#define OUT(t, ...)                                                                                \
	do {                                                                                       \
		if ((t)->at < (t)->size)                                                           \
			(t)->at += (size_t)snprintf((t)->buf + (t)->at, (t)->size - (t)->at,       \
						    __VA_ARGS__);                                  \
	} while (0)

static int tp_text_field(const struct tr_tp_field *f, void *data)
{
	struct tp_text *t = data;
	char txt[512];

	if (!t->started)
		OUT(t, "%s(", t->name);
	OUT(t, "%s%s=", t->started ? ", " : "", f->name);
	t->started = 1;
	if (f->kind == 's' && !f->str)
		OUT(t, "(null)");
	else if (f->kind == 's')
		OUT(t, "\"%s\"", tr_printable(f->str, txt, sizeof(txt)));
	else if (f->kind == 'p')
		OUT(t, "0x%" PRIx64, f->u);
	else if (f->kind == 'i')
		OUT(t, "%" PRId64, f->i);
	else
		OUT(t, "%" PRIu64, f->u);
	return 0;
}

void tr_tracepoint_format(struct tr_stream *st, const struct tr_event *ev, char *buf, size_t size)
{
	char name[256];
	struct tp_text t = {.buf = buf, .size = size, .name = name};
	int r;

	if (!size)
		return;
	r = tr_tracepoint_fields(st, ev, name, sizeof(name), tp_text_field, &t);
	if (r == -ENOENT) {
		snprintf(buf, size, "#%u(%zu bytes)", (unsigned)ev->func, (size_t)ev->arg);
		return;
	}
	if (!t.started)
		OUT(&t, "%s(", name);
	OUT(&t, ")%s", r ? " <damaged>" : "");
	if (t.at >= size)
		buf[size - 1] = 0;
}
#undef OUT
