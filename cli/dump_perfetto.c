// SPDX-License-Identifier: MIT
/*
 * dump_perfetto.c - `dynftrace dump --perfetto`: the trace as Perfetto's
 * own protobuf format (a Trace: repeated TracePacket), which
 * ui.perfetto.dev and trace_processor open. The messages and field numbers
 * used are those of tests/perfetto/perfetto_subset.proto, a subset of
 * Perfetto's protos/perfetto/trace/ (the test decodes the output with it).
 *
 *   a TrackDescriptor per process (pid, name) and per thread (pid, tid,
 *   name, the process's track as parent);
 *   a packet sequence per thread (trusted_packet_sequence_id): its first
 *   packet clears the incremental state and sets the default track
 *   (TracePacketDefaults), so events carry no track; function names are
 *   interned on the sequence (InternedData.event_names), sent with the
 *   first event that uses them;
 *   a call is a TYPE_SLICE_BEGIN / TYPE_SLICE_END pair (still open when the
 *   thread's trace ended: ended there with the debug annotation
 *   unfinished=true; left by longjmp or an exception: unwound=true);
 *   function-tracer calls, losses, markers and tracepoint hits are
 *   TYPE_INSTANT events; a caller, a count and tracepoint fields are debug
 *   annotations.
 *
 * Timestamps are nanoseconds since the start of the recording (as --chrome
 * counts them), in the default clock. Memory: the interned names of the
 * thread being written; threads are written one after the other.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"
#include "strtab.h"
#include "trace_read.h"
#include "views.h"

/* Field numbers (Perfetto's protos/perfetto/trace/). */
enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED = 12,
	PKT_SEQ_FLAGS = 13,
	PKT_DEFAULTS = 59,
	PKT_TRACK_DESC = 60,
	/* TracePacketDefaults, TrackEventDefaults */
	DEF_TRACK_EVENT = 11,
	TED_TRACK_UUID = 11,
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT = 5,
	PD_PID = 1,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
	/* TrackEvent */
	TE_ANNOTATION = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_NAME = 23,
	/* DebugAnnotation */
	DA_BOOL = 2,
	DA_UINT = 3,
	DA_INT = 4,
	DA_STRING = 6,
	DA_POINTER = 7,
	DA_NAME = 10,
	/* InternedData, EventName */
	ID_EVENT_NAMES = 2,
	EN_IID = 1,
	EN_NAME = 2,
};
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3 };

#define PROC_UUID(pid)	 ((uint64_t)1 << 40 | (uint32_t)(pid))
#define THREAD_UUID(idx) ((uint64_t)2 << 40 | (uint64_t)(idx))

struct pf {
	FILE *out;
	struct pb pkt;	   /* the packet being built */
	uint64_t base;	   /* the session's first time */
	uint32_t seq;	   /* the current stream's sequence */
	struct strtab iid; /* its interned names: iid = id + 1 */
	uint32_t *iid_of;  /* dense processes: site id -> iid */
	size_t niid_of;
	char name[256]; /* the process name */
};

/* Write the packet built in pf->pkt as one Trace.packet. */
static int flush_packet(struct pf *pf)
{
	uint8_t hdr[12];
	size_t h = 0;
	uint64_t len = pf->pkt.n;

	if (pf->pkt.oom)
		return -ENOMEM;
	hdr[h++] = TRACE_PACKET << 3 | PB_LEN;
	do {
		hdr[h++] = (uint8_t)(len | (len >= 0x80 ? 0x80 : 0));
		len >>= 7;
	} while (len);
	fwrite(hdr, 1, h, pf->out);
	fwrite(pf->pkt.b, 1, pf->pkt.n, pf->out);
	pf->pkt.n = 0;
	return 0;
}

static void str_field(struct pb *p, unsigned field, const char *s)
{
	char buf[1024];

	pb_str(p, field, views_text(s, buf, sizeof(buf)));
}

/* The iid of NAME on the current sequence; a new one is added to the
 * packet's InternedData (opened by the caller before the TrackEvent, as
 * the field order does not matter). */
static int64_t intern(struct pf *pf, const char *name, struct pb *interned)
{
	char buf[1024];
	int added;
	int64_t id = strtab_intern(&pf->iid, views_text(name, buf, sizeof(buf)), &added);

	if (id < 0)
		return id;
	if (added) {
		size_t m = pb_open(interned, ID_EVENT_NAMES);

		pb_uint(interned, EN_IID, (uint64_t)id + 1);
		pb_str(interned, EN_NAME, buf);
		pb_close(interned, m);
	}
	return id + 1;
}

/* Start an event packet at TS; returns where its TrackEvent starts. */
static size_t event_start(struct pf *pf, uint64_t ts, int type)
{
	size_t te;

	pb_uint(&pf->pkt, PKT_TIMESTAMP, ts >= pf->base ? ts - pf->base : 0);
	pb_uint(&pf->pkt, PKT_SEQ_ID, pf->seq);
	pb_uint(&pf->pkt, PKT_SEQ_FLAGS, SEQ_NEEDS_STATE);
	te = pb_open(&pf->pkt, PKT_TRACK_EVENT);
	pb_uint(&pf->pkt, TE_TYPE, (uint64_t)type);
	return te;
}

/* A named event: interned names go to an InternedData after the event. */
static int named_event(struct pf *pf, uint64_t ts, int type, const char *name, size_t *te,
		       uint32_t *iidp)
{
	struct pb interned = {0};
	int64_t iid = intern(pf, name, &interned);

	if (iid < 0 || interned.oom) {
		free(interned.b);
		return -ENOMEM;
	}
	if (interned.n)
		pb_bytes(&pf->pkt, PKT_INTERNED, interned.b, interned.n);
	free(interned.b);
	*te = event_start(pf, ts, type);
	pb_uint(&pf->pkt, TE_NAME_IID, (uint64_t)iid);
	if (iidp)
		*iidp = (uint32_t)iid;
	return 0;
}

static int func_event(struct pf *pf, struct tr_stream *st, uint32_t func, size_t *te, uint64_t ts,
		      int type)
{
	uint32_t iid;
	int r;

	if (func < pf->niid_of && pf->iid_of[func]) {
		*te = event_start(pf, ts, type);
		pb_uint(&pf->pkt, TE_NAME_IID, pf->iid_of[func]);
		return 0;
	}
	r = named_event(pf, ts, type, tr_func_name(st->proc, func), te, &iid);
	if (!r && func < pf->niid_of)
		pf->iid_of[func] = iid;
	return r;
}

static void ann_bool(struct pb *p, const char *name)
{
	size_t a = pb_open(p, TE_ANNOTATION);

	pb_str(p, DA_NAME, name);
	pb_uint(p, DA_BOOL, 1);
	pb_close(p, a);
}

static int pf_enter(struct tr_walk *w, struct tr_frame *f, const struct tr_event *ev)
{
	struct pf *pf = w->data;
	size_t te;
	int r;

	(void)ev;
	if ((r = func_event(pf, w->st, f->func, &te, f->ts, SLICE_BEGIN)))
		return r;
	pb_close(&pf->pkt, te);
	return flush_packet(pf);
}

static int pf_leave(struct tr_walk *w, struct tr_frame *f, uint64_t ts, int how)
{
	struct pf *pf = w->data;
	size_t te = event_start(pf, ts, SLICE_END);

	(void)f;
	if (how == TR_LEAVE_UNFINISHED)
		ann_bool(&pf->pkt, "unfinished");
	else if (how == TR_LEAVE_UNWIND)
		ann_bool(&pf->pkt, "unwound");
	else if (how == TR_LEAVE_LOST)
		ann_bool(&pf->pkt, "exit_lost");
	pb_close(&pf->pkt, te);
	return flush_packet(pf);
}

static int tp_field(const struct tr_tp_field *f, void *data)
{
	struct pb *p = data;
	size_t a = pb_open(p, TE_ANNOTATION);

	str_field(p, DA_NAME, f->name);
	if (f->kind == 's')
		str_field(p, DA_STRING, f->str ? f->str : "(null)");
	else if (f->kind == 'p')
		pb_uint(p, DA_POINTER, f->u);
	else if (f->kind == 'i')
		pb_uint(p, DA_INT, (uint64_t)f->i);
	else
		pb_uint(p, DA_UINT, f->u);
	pb_close(p, a);
	return 0;
}

static int pf_other(struct tr_walk *w, const struct tr_event *ev)
{
	struct pf *pf = w->data;
	char buf[1100], num[40];
	size_t te, a;
	int r;

	switch (ev->type) {
	case TR_CALL: {
		uint64_t start = ev->arg < ev->ts ? ev->ts - ev->arg : 0;

		if ((r = func_event(pf, w->st, ev->func, &te, start, SLICE_BEGIN)))
			return r;
		pb_close(&pf->pkt, te);
		if ((r = flush_packet(pf)))
			return r;
		te = event_start(pf, ev->ts, SLICE_END);
		break;
	}
	case TR_FUNCTION:
		if ((r = func_event(pf, w->st, ev->func, &te, ev->ts, INSTANT)))
			return r;
		a = pb_open(&pf->pkt, TE_ANNOTATION);
		pb_str(&pf->pkt, DA_NAME, "caller");
		str_field(&pf->pkt, DA_STRING,
			  tr_symbolize(w->st->proc, ev->arg, buf, sizeof(buf)));
		pb_close(&pf->pkt, a);
		break;
	case TR_LOST:
	case TR_DISCARDED:
		te = event_start(pf, ev->ts, INSTANT);
		snprintf(buf, sizeof(buf), "lost %s events",
			 cli_thousands(ev->arg, num, sizeof(num)));
		pb_str(&pf->pkt, TE_NAME, buf);
		a = pb_open(&pf->pkt, TE_ANNOTATION);
		pb_str(&pf->pkt, DA_NAME, "count");
		pb_uint(&pf->pkt, DA_UINT, ev->arg);
		pb_close(&pf->pkt, a);
		break;
	case TR_MARKER:
		te = event_start(pf, ev->ts, INSTANT);
		str_field(&pf->pkt, TE_NAME, ev->text);
		break;
	case TR_TRACEPOINT: {
		struct pb fields = {0};
		char name[256];

		r = tr_tracepoint_fields(w->st, ev, name, sizeof(name), tp_field, &fields);
		if (fields.oom || named_event(pf, ev->ts, INSTANT, name, &te, NULL)) {
			free(fields.b);
			return -ENOMEM;
		}
		if (fields.n && pb_room(&pf->pkt, fields.n)) {
			memcpy(pf->pkt.b + pf->pkt.n, fields.b, fields.n);
			pf->pkt.n += fields.n;
		}
		free(fields.b);
		if (r == -EINVAL)
			ann_bool(&pf->pkt, "damaged");
		break;
	}
	default:
		return 0;
	}
	pb_close(&pf->pkt, te);
	return flush_packet(pf);
}

/* A context switch: the slices of the frames set aside end, "switched",
 * and begin again, "resumed", when they come back (a track's slices nest). */
static int pf_suspend(struct tr_walk *w, struct tr_frame *f, uint64_t ts)
{
	struct pf *pf = w->data;
	size_t te = event_start(pf, ts, SLICE_END);

	(void)f;
	ann_bool(&pf->pkt, "switched");
	pb_close(&pf->pkt, te);
	return flush_packet(pf);
}

static int pf_resume(struct tr_walk *w, struct tr_frame *f, uint64_t ts)
{
	struct pf *pf = w->data;
	size_t te;
	int r;

	if ((r = func_event(pf, w->st, f->func, &te, ts, SLICE_BEGIN)))
		return r;
	ann_bool(&pf->pkt, "resumed");
	pb_close(&pf->pkt, te);
	return flush_packet(pf);
}

static const struct tr_walk_ops pf_ops = {.enter = pf_enter,
					  .leave = pf_leave,
					  .other = pf_other,
					  .suspend = pf_suspend,
					  .resume = pf_resume};

static int descriptors(struct pf *pf, struct tr_session *s, const struct cli_select *sel)
{
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		int seen = 0;
		size_t td, d;

		if (!cli_select_tid(sel, st->tid))
			continue;
		for (size_t j = 0; j < i; j++)
			seen |=
			    cli_select_tid(sel, s->streams[j].tid) && s->streams[j].pid == st->pid;
		if (!seen) {
			td = pb_open(&pf->pkt, PKT_TRACK_DESC);
			pb_uint(&pf->pkt, TD_UUID, PROC_UUID(st->pid));
			d = pb_open(&pf->pkt, TD_PROCESS);
			pb_uint(&pf->pkt, PD_PID, (uint64_t)(int64_t)st->pid);
			pb_str(&pf->pkt, PD_NAME, pf->name);
			pb_close(&pf->pkt, d);
			pb_close(&pf->pkt, td);
			if (flush_packet(pf))
				return -ENOMEM;
		}
		/* Threads are named as the kernel names them: after the process. */
		td = pb_open(&pf->pkt, PKT_TRACK_DESC);
		pb_uint(&pf->pkt, TD_UUID, THREAD_UUID(i));
		pb_uint(&pf->pkt, TD_PARENT, PROC_UUID(st->pid));
		d = pb_open(&pf->pkt, TD_THREAD);
		pb_uint(&pf->pkt, THD_PID, (uint64_t)(int64_t)st->pid);
		pb_uint(&pf->pkt, THD_TID, (uint64_t)(int64_t)st->tid);
		pb_str(&pf->pkt, THD_NAME, pf->name);
		pb_close(&pf->pkt, d);
		pb_close(&pf->pkt, td);
		if (flush_packet(pf))
			return -ENOMEM;
	}
	return 0;
}

int dump_perfetto_run(struct tr_session *s, const struct cli_select *sel, FILE *out)
{
	struct pf pf = {.out = out};
	int ret;

	pf.base = tr_base_ts(s);
	views_text(s->info.command ? s->info.command : "", pf.name, sizeof(pf.name));
	pf.name[strcspn(pf.name, " ")] = 0;
	ret = descriptors(&pf, s, sel);
	for (size_t i = 0; i < s->nstreams && !ret; i++) {
		struct tr_stream *st = &s->streams[i];
		struct tr_walk w;
		struct tr_event ev;
		size_t d, e;

		if (!cli_select_tid(sel, st->tid))
			continue;
		/* A new sequence: its defaults, nothing interned yet. */
		pf.seq = (uint32_t)i + 1;
		strtab_free(&pf.iid);
		free(pf.iid_of);
		pf.niid_of = st->proc->dense ? st->proc->nsites : 0;
		pf.iid_of = pf.niid_of ? calloc(pf.niid_of, sizeof(*pf.iid_of)) : NULL;
		if (pf.niid_of && !pf.iid_of) {
			ret = -ENOMEM;
			break;
		}
		pb_uint(&pf.pkt, PKT_SEQ_ID, pf.seq);
		pb_uint(&pf.pkt, PKT_SEQ_FLAGS, SEQ_CLEARED);
		d = pb_open(&pf.pkt, PKT_DEFAULTS);
		e = pb_open(&pf.pkt, DEF_TRACK_EVENT);
		pb_uint(&pf.pkt, TED_TRACK_UUID, THREAD_UUID(i));
		pb_close(&pf.pkt, e);
		pb_close(&pf.pkt, d);
		if ((ret = flush_packet(&pf)))
			break;
		tr_walk_init(&w, &pf_ops, &pf, st);
		tr_stream_rewind(st);
		while (!ret && tr_stream_next(st, &ev) > 0)
			ret = tr_walk_feed(&w, &ev);
		tr_walk_free(&w);
	}
	strtab_free(&pf.iid);
	free(pf.iid_of);
	free(pf.pkt.b);
	return views_finish(s, out, ret);
}
