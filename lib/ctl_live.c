/* SPDX-License-Identifier: MIT */
/*
 * ctl_live.c - the in-memory trace buffers of live control: what
 * the control endpoint's `trace` and `trace_pipe` files show, whether or not
 * the process records into a session directory.
 *
 * 1. One buffer per thread, fixed-size records, overwrite mode
 * -------------------------------------------------------------
 * A thread's first record maps its buffer (mmap: no malloc, no lock, usable
 * in a signal handler) and pushes it on live_head with one CAS. The buffer
 * is a power-of-two array of 32-byte records indexed by a free-running
 * counter; the oldest records are overwritten (the kernel's overwrite mode),
 * so a writer never waits for anybody and a reader can never hold it up.
 *
 *   +-----------------+--------+--------+-----+----------+
 *   | struct live_buf | rec[0] | rec[1] | ... | rec[N-1] |    index i lives in
 *   +-----------------+--------+--------+-----+----------+    rec[i & (N-1)]
 *
 *   record: | seq (i+1 once written, 0 while being written) | ts | id,type,depth | arg |
 *
 * 2. Writers (the owner thread and its signal handlers)
 * ------------------------------------------------------
 *   i = xadd(head, n)       one instruction without lock prefix: atomic
 *                           against a signal handler of the same thread
 *   seq = 0; release fence; the fields; seq = i + 1 (release)
 * A marker takes 1 + ceil(len / 16) consecutive records (text records carry
 * 16 bytes each). A nested handler that slips in between reserves the next
 * index, so records of one thread never tear each other.
 *
 * 3. Readers (the control thread only): a seqlock per record
 * ----------------------------------------------------------
 *   s1 = seq (acquire); copy the fields; acquire fence; s2 = seq
 *   s1 == s2 == i + 1   the record is whole
 *   otherwise           overwritten (head has moved a lap past i: skip and
 *                       count it lost) or not yet written (stop there for
 *                       trace_pipe, skip for trace)
 * The control thread keeps the positions: `start` (set by `echo > trace`),
 * `pipe` (trace_pipe's consuming position). Views merge the threads by
 * timestamp (a k-way merge over per-thread cursors).
 *
 * 4. Life cycle
 * -------------
 * A buffer is retired by its owner: at thread exit, or when buffer_size_kb
 * changed (live_gen moved) and no record of the thread is in flight (nest ==
 * 0). The control thread frees retired buffers nobody reads (refs == 0)
 * once they are read or cleared, and always beyond LIVE_KEEP_DEAD of them.
 *
 * | field                      | written by                   | read by            |
 * |----------------------------|------------------------------|--------------------|
 * | live_enabled               | control thread (release):    | callbacks          |
 * |                            | start, or first live_open    |                    |
 * | live_gen, live_kb          | control thread (atomic)      | writers (slow path)|
 * | live_paused                | control thread (atomic)      | writers (relaxed)  |
 * | live_head                  | writers (CAS push); control  | control thread     |
 * |                            | thread (unlink, only remover)|                    |
 * | b->head                    | owner (non-locked xadd)      | control (acquire)  |
 * | b->nest                    | owner (balanced inc/dec)     | owner              |
 * | b->retired                 | owner (release)              | control (acquire)  |
 * | records                    | owner (seqlock writer)       | control (seqlock)  |
 * | b->start/pipe/read/refs/comm | control thread             | control thread     |
 * | b->gen, mask, tid, next... | creator before publication   | all                |
 * | names[], names_n           | control thread               | control thread     |
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctl.h"
#include <dynftrace/tracepoint.h>
#include "patch.h"
#include "sites.h"

#if defined(__SANITIZE_THREAD__)
#define LIVE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LIVE_TSAN 1
#endif
#endif

/* The seqlock's fences. TSan does not model fences (and warns about them);
 * every record field is accessed atomically, so it has nothing to report
 * without them. */
#ifdef LIVE_TSAN
#define live_fence(order) ((void)0)
#else
#define live_fence(order) __atomic_thread_fence(order)
#endif

enum { LR_ENTRY = 1, LR_EXIT = 2, LR_CALL = 3, LR_FUNC = 4, LR_MARKER = 5, LR_TEXT = 6 };

#define LIVE_TEXT_PER_REC 16 /* text bytes in a LR_TEXT record (ts and arg) */
#define LIVE_KEEP_DEAD	  16 /* retired, unread buffers kept for `trace` */
#define LIVE_KB_MIN	  8
#define LIVE_KB_MAX	  262144

struct live_rec {
	uint64_t seq; /* index + 1 once written; 0 while being written */
	uint64_t ts;
	uint64_t w;   /* id | type << 32 | depth << 40 */
	uint64_t arg; /* parent ip (FUNC), duration (EXIT, CALL), length (MARKER) */
};

struct live_buf {
	uint64_t head;	  /* records reserved */
	uint32_t nest;	  /* records of this thread being written */
	uint32_t retired; /* no more records */
	uint64_t mask;	  /* records - 1 */
	uint64_t gen;	  /* live_gen it was made for */
	size_t map_size;
	pid_t tid;
	struct live_buf *next;
	/* Control thread only. */
	uint64_t start; /* first index shown (clear position) */
	uint64_t pipe;	/* trace_pipe's consuming position */
	uint64_t read;	/* records consumed by trace_pipe */
	int refs;	/* open snapshot cursors */
	char comm[20];
	struct live_rec rec[] __attribute__((aligned(64)));
};

HIDDEN int live_enabled;
HIDDEN unsigned live_epoch; /* bumped by every clear (atomic) */
/* Open `trace` snapshots: while one is read, records are not taken (the
 * kernel's pause-on-trace), so a busy writer does not overwrite what the
 * reader is formatting. trace_pipe and the recording are not paused. */
static unsigned live_paused;
static uint64_t live_gen = 1;
static size_t live_kb = 512;
static struct live_buf *live_head;
static unsigned long live_fork_gen; /* cursors made before a fork are stale */

enum { TLS_NONE = 0, TLS_BUSY = 1, TLS_READY = 2, TLS_FAILED = 3, TLS_DEAD = 4 };
static __thread struct live_buf *live_tls __attribute__((tls_model("initial-exec")));
static __thread uint32_t live_tls_state __attribute__((tls_model("initial-exec")));
static __thread uint64_t live_tls_failgen __attribute__((tls_model("initial-exec")));

/* ---- writer --------------------------------------------------------------- */

static inline uint64_t local_xadd(uint64_t *p, uint64_t v)
{
#ifndef LIVE_TSAN
	return arch_local_xadd(p, v);
#else
	return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}

static struct live_buf *live_create(void)
{
	uint64_t gen = __atomic_load_n(&live_gen, __ATOMIC_ACQUIRE);
	size_t kb = __atomic_load_n(&live_kb, __ATOMIC_RELAXED);
	size_t n = 1;
	while (n * 2 * sizeof(struct live_rec) <= kb * 1024)
		n *= 2;
	size_t hdr = (sizeof(struct live_buf) + 63) & ~(size_t)63;
	size_t len = hdr + n * sizeof(struct live_rec);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		live_tls_failgen = gen;
		return NULL;
	}
	struct live_buf *b = m;
	b->mask = n - 1;
	b->gen = gen;
	b->map_size = len;
	b->tid = (pid_t)syscall(SYS_gettid);
	struct live_buf *h = __atomic_load_n(&live_head, __ATOMIC_RELAXED);
	do
		b->next = h;
	while (
	    !__atomic_compare_exchange_n(&live_head, &h, b, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return b;
}

static __attribute__((noinline)) struct live_buf *live_get_slow(void)
{
	uint32_t st = live_tls_state;
	if (st == TLS_BUSY || st == TLS_DEAD)
		return NULL;
	uint64_t gen = __atomic_load_n(&live_gen, __ATOMIC_RELAXED);
	if (st == TLS_FAILED && live_tls_failgen == gen)
		return NULL;
	struct live_buf *b = live_tls;
	if (b) {
		if (b->nest)
			return NULL; /* an interrupted record still writes the old one */
		live_tls = NULL;
		__atomic_store_n(&b->retired, 1, __ATOMIC_RELEASE);
	}
	live_tls_state = TLS_BUSY;
	barrier();
	int saved = errno;
	b = live_create();
	errno = saved;
	live_tls = b;
	barrier();
	live_tls_state = b ? TLS_READY : TLS_FAILED;
	return b;
}

static inline struct live_buf *live_get(void)
{
	struct live_buf *b = live_tls;
	if (likely(b && b->gen == __atomic_load_n(&live_gen, __ATOMIC_RELAXED)))
		return b;
	return live_get_slow();
}

static inline void rec_write(struct live_buf *b, uint64_t i, uint64_t ts, uint64_t w, uint64_t arg)
{
	struct live_rec *r = &b->rec[i & b->mask];
	__atomic_store_n(&r->seq, 0, __ATOMIC_RELAXED);
	live_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&r->ts, ts, __ATOMIC_RELAXED);
	__atomic_store_n(&r->w, w, __ATOMIC_RELAXED);
	__atomic_store_n(&r->arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&r->seq, i + 1, __ATOMIC_RELEASE);
}

static inline int live_put(unsigned type, uint32_t id, uint32_t depth, uint64_t ts, uint64_t arg)
{
	if (unlikely(__atomic_load_n(&live_paused, __ATOMIC_RELAXED)))
		return 0;
	struct live_buf *b = live_get();
	if (unlikely(!b))
		return 0;
	b->nest++;
	barrier();
	uint64_t i = local_xadd(&b->head, 1);
	if (depth > 0xffff)
		depth = 0xffff;
	rec_write(b, i, ts, (uint64_t)id | (uint64_t)type << 32 | (uint64_t)depth << 40, arg);
	barrier();
	b->nest--;
	return 1;
}

int live_entry(uint32_t id, uint32_t depth, uint64_t ts)
{
	return live_put(LR_ENTRY, id, depth, ts, 0);
}

int live_exit(uint32_t id, uint32_t depth, uint64_t ts, uint64_t dur)
{
	return live_put(LR_EXIT, id, depth, ts, dur);
}

int live_call(uint32_t id, uint32_t depth, uint64_t ts, uint64_t dur)
{
	return live_put(LR_CALL, id, depth, ts, dur);
}

int live_function(uint32_t id, uintptr_t parent_ip, uint64_t ts)
{
	return live_put(LR_FUNC, id, 0, ts, parent_ip);
}

int live_marker(const char *text, size_t len, uint64_t ts)
{
	if (__atomic_load_n(&live_paused, __ATOMIC_RELAXED))
		return 0;
	struct live_buf *b = live_get();
	if (!b)
		return 0;
	if (len > LIVE_MARKER_MAX)
		len = LIVE_MARKER_MAX;
	uint64_t k = (len + LIVE_TEXT_PER_REC - 1) / LIVE_TEXT_PER_REC;
	if (k + 1 > (b->mask + 1) / 2)
		return 0; /* a tiny buffer: it would overwrite itself */
	b->nest++;
	barrier();
	uint64_t i = local_xadd(&b->head, k + 1);
	rec_write(b, i, ts, (uint64_t)LR_MARKER << 32, len);
	for (uint64_t j = 0; j < k; j++) {
		uint64_t t[2] = {0, 0};
		size_t off = j * LIVE_TEXT_PER_REC;
		memcpy(t, text + off,
		       len - off < LIVE_TEXT_PER_REC ? len - off : LIVE_TEXT_PER_REC);
		rec_write(b, i + 1 + j, t[0], (uint64_t)LR_TEXT << 32, t[1]);
	}
	barrier();
	b->nest--;
	return 1;
}

/* ---- tracepoints: formatted without stdio (signal handlers) ------------- */

struct tpfmt {
	char *p;
	size_t n, cap;
};

static void tf_put(struct tpfmt *b, const char *s, size_t n)
{
	while (n-- && b->n < b->cap)
		b->p[b->n++] = *s++;
}

static void tf_str(struct tpfmt *b, const char *s)
{
	tf_put(b, s, strlen(s));
}

static void tf_num(struct tpfmt *b, uint64_t v, unsigned base, int neg)
{
	char t[24];
	size_t i = sizeof(t);
	do {
		t[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	if (base == 16) {
		t[--i] = 'x';
		t[--i] = '0';
	}
	if (neg)
		t[--i] = '-';
	tf_put(b, t + i, sizeof(t) - i);
}

int live_tracepoint(const char *name, const struct dynftrace_tp_field *f, unsigned nf,
		    const uint8_t *data, size_t len, uint64_t ts)
{
	char text[LIVE_MARKER_MAX];
	struct tpfmt b = {text, 0, sizeof(text)};
	size_t at = 0;
	tf_str(&b, "tp: ");
	tf_str(&b, name);
	tf_put(&b, "(", 1);
	for (unsigned i = 0; i < nf; i++) {
		if (i)
			tf_put(&b, ", ", 2);
		tf_str(&b, f[i].name);
		tf_put(&b, "=", 1);
		if (f[i].kind == DYNFTRACE_FIELD_STRING) {
			const uint8_t *z = at < len ? memchr(data + at, 0, len - at) : NULL;
			if (!z)
				break;
			if (z - (data + at) == 1 && data[at] == 0xff) {
				tf_str(&b, "(null)");
			} else {
				tf_put(&b, "\"", 1);
				for (const uint8_t *c = data + at; c < z; c++)
					tf_put(&b, *c < 32 || *c == 127 ? "?" : (const char *)c, 1);
				tf_put(&b, "\"", 1);
			}
			at = (size_t)(z - data) + 1;
			continue;
		}
		if (f[i].size > 8 || len - at < f[i].size)
			break;
		uint64_t v = 0;
		for (unsigned k = 0; k < f[i].size; k++)
			v |= (uint64_t)data[at + k] << (8 * k);
		at += f[i].size;
		if (f[i].kind == DYNFTRACE_FIELD_POINTER) {
			tf_num(&b, v, 16, 0);
		} else if (f[i].is_signed && f[i].size &&
			   (v >> (8 * f[i].size - 1)) & 1) { /* negative */
			if (f[i].size < 8)
				v |= ~(uint64_t)0 << (8 * f[i].size);
			tf_num(&b, -v, 10, 1);
		} else {
			tf_num(&b, v, 10, 0);
		}
	}
	tf_put(&b, ")", 1);
	return live_marker(text, b.n, ts);
}

void live_thread_exit(void)
{
	struct live_buf *b = live_tls;
	live_tls_state = TLS_DEAD;
	barrier();
	live_tls = NULL;
	if (b)
		__atomic_store_n(&b->retired, 1, __ATOMIC_RELEASE);
}

void live_atfork_child(void)
{
	/* Forget the parent's buffers before unmapping them: a signal handler
	 * of this thread must not write to one. */
	live_tls = NULL;
	live_tls_state = TLS_NONE;
	barrier();
	struct live_buf *b = live_head, *next;
	live_head = NULL;
	live_fork_gen++;
	live_paused = 0; /* the parent's cursors are not ours */
	for (; b; b = next) {
		next = b->next;
		munmap(b, b->map_size);
	}
}

/* ---- reader (control thread) ---------------------------------------------- */

enum { REC_OK, REC_NOTYET, REC_GONE };

static uint64_t buf_head(const struct live_buf *b)
{
	return __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
}

/* First index still in the buffer for readers. */
static uint64_t buf_first(const struct live_buf *b, uint64_t head)
{
	uint64_t n = b->mask + 1, first = head > n ? head - n : 0;
	return b->start > first ? b->start : first;
}

static int rec_read(struct live_buf *b, uint64_t idx, struct live_rec *out)
{
	struct live_rec *r = &b->rec[idx & b->mask];
	uint64_t s1 = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
	if (s1 == idx + 1) {
		out->ts = __atomic_load_n(&r->ts, __ATOMIC_RELAXED);
		out->w = __atomic_load_n(&r->w, __ATOMIC_RELAXED);
		out->arg = __atomic_load_n(&r->arg, __ATOMIC_RELAXED);
		live_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->seq, __ATOMIC_RELAXED) == idx + 1)
			return REC_OK;
		return REC_GONE;
	}
	if (s1 > idx + 1)
		return REC_GONE;
	/* Being written: for idx, or for a later lap? */
	return buf_head(b) > idx + b->mask + 1 ? REC_GONE : REC_NOTYET;
}

static unsigned rec_type(const struct live_rec *r)
{
	return (unsigned)(r->w >> 32) & 0xff;
}

static uint32_t rec_id(const struct live_rec *r)
{
	return (uint32_t)r->w;
}

static unsigned rec_depth(const struct live_rec *r)
{
	return (unsigned)(r->w >> 40) & 0xffff;
}

/* One thread's stream within a cursor. */
struct live_src {
	struct live_buf *b;
	uint64_t pos;  /* next index */
	uint64_t end;  /* snapshot: stop here */
	uint64_t lost; /* skipped (overwritten) and not yet reported */
	int have;      /* rec (and text) hold the event at pos, spanning `span` */
	unsigned span;
	struct live_rec rec;
	size_t text_len;
	char text[LIVE_MARKER_MAX];
};

struct live_cursor {
	int consume, graph;
	unsigned long fork_gen;
	size_t n, cap;
	struct live_src *src;
	char line[LIVE_MARKER_MAX + 512]; /* formatted, not yet handed out */
	size_t line_len, line_off;
};

/* Read the event at S->pos into S (skipping what was overwritten).
 * Returns 1 when S holds one, 0 when the stream has nothing (yet). */
static int src_fetch(struct live_cursor *c, struct live_src *s)
{
	struct live_buf *b = s->b;
	while (!s->have) {
		uint64_t head = buf_head(b);
		uint64_t first = buf_first(b, head);
		if (c->consume) {
			if (s->pos < b->pipe)
				s->pos = b->pipe;
			s->end = head;
		}
		if (s->pos < first) {
			/* Overwritten before we got there (a clear is no loss). */
			uint64_t from = s->pos > b->start ? s->pos : b->start;
			if (first > from)
				s->lost += first - from;
			s->pos = first;
		}
		if (s->pos >= s->end)
			return 0;
		int st = rec_read(b, s->pos, &s->rec);
		if (st == REC_GONE) {
			s->lost++;
			s->pos++;
			continue;
		}
		if (st == REC_NOTYET) {
			/* In flight. trace: not shown. trace_pipe: wait for it,
			 * unless its writer is gone or far ahead. */
			if (c->consume && !__atomic_load_n(&b->retired, __ATOMIC_ACQUIRE) &&
			    head - s->pos < (b->mask + 1) / 2)
				return 0;
			s->pos++;
			continue;
		}
		unsigned t = rec_type(&s->rec);
		if (t == LR_TEXT || t < LR_ENTRY || t > LR_MARKER) {
			s->pos++; /* text of an overwritten marker */
			continue;
		}
		s->span = 1;
		if (t == LR_MARKER) {
			size_t len = s->rec.arg > LIVE_MARKER_MAX ? LIVE_MARKER_MAX : s->rec.arg;
			uint64_t k = (len + LIVE_TEXT_PER_REC - 1) / LIVE_TEXT_PER_REC, j;
			int bad = 0;
			for (j = 0; j < k && !bad; j++) {
				struct live_rec tr;
				int tst = s->pos + 1 + j < s->end ? rec_read(b, s->pos + 1 + j, &tr)
								  : REC_NOTYET;
				if (tst == REC_NOTYET && c->consume &&
				    !__atomic_load_n(&b->retired, __ATOMIC_ACQUIRE) &&
				    head - s->pos < (b->mask + 1) / 2)
					return 0;
				if (tst != REC_OK || rec_type(&tr) != LR_TEXT) {
					bad = 1;
					break;
				}
				uint64_t t2[2] = {tr.ts, tr.arg};
				size_t off = j * LIVE_TEXT_PER_REC;
				memcpy(s->text + off, t2,
				       len - off < LIVE_TEXT_PER_REC ? len - off
								     : LIVE_TEXT_PER_REC);
			}
			if (bad) {
				s->lost++;
				s->pos++;
				continue;
			}
			s->text_len = len;
			s->span = 1 + (unsigned)k;
		}
		s->have = 1;
	}
	return 1;
}

static void src_advance(struct live_cursor *c, struct live_src *s, unsigned n)
{
	s->pos += n;
	s->have = 0;
	if (c->consume) {
		s->b->pipe = s->pos;
		s->b->read++;
	}
}

/* ---- names ---------------------------------------------------------------- */

static char **names;
static uint32_t names_n;

/* patch_lock held */
static void names_refresh(void)
{
	uint32_t n = site_next_id;
	if (n <= names_n)
		return;
	char **nv = realloc(names, n * sizeof(*nv));
	if (!nv)
		return;
	memset(nv + names_n, 0, (n - names_n) * sizeof(*nv));
	names = nv;
	for (size_t i = 0; i < site_count; i++) {
		const struct site *s = &site_tab[i];
		if (s->id < names_n || s->id >= n)
			continue;
		const char *nm = site_func_name(s);
		if (nm) {
			names[s->id] = strdup(nm);
		} else {
			char buf[64];
			snprintf(buf, sizeof(buf), "0x%lx",
				 (unsigned long)(s->addr - s->obj->bias));
			names[s->id] = strdup(buf);
		}
	}
	names_n = n;
}

const char *live_func_name(uint32_t id)
{
	if (id >= names_n) {
		patch_lock();
		names_refresh();
		patch_unlock();
	}
	return id < names_n ? names[id] : NULL;
}

/* The function containing A (patch_lock held), or A in hex. */
static const char *sym_of(uintptr_t a, char *buf, size_t n)
{
	for (size_t i = 0; i < obj_count; i++) {
		const struct dft_object *o = obj_tab[i];
		if (a < o->lo || a >= o->hi)
			continue;
		int32_t f = elf_func_lookup(&o->img, a - o->bias);
		const char *nm = f >= 0 ? elf_func_name(&o->img, f) : NULL;
		if (nm)
			return nm;
		break;
	}
	snprintf(buf, n, "0x%lx", (unsigned long)a);
	return buf;
}

static const char *buf_comm(struct live_buf *b)
{
	if (!b->comm[0]) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)b->tid);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t r = fd >= 0 ? read(fd, b->comm, sizeof(b->comm) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (r <= 0)
			r = snprintf(b->comm, sizeof(b->comm), "<...>");
		b->comm[r] = 0;
		char *nl = strchr(b->comm, '\n');
		if (nl)
			*nl = 0;
	}
	return b->comm;
}

/* ---- formatting ----------------------------------------------------------- */

/* The kernel's duration column: a mark for long calls, then microseconds. */
static void fmt_dur(char *d, size_t n, uint64_t ns, int have)
{
	if (!have) {
		snprintf(d, n, "%17s", ""); /* as wide as a duration */
		return;
	}
	char mark = ' ';
	if (ns > 1000000000ull)
		mark = '$';
	else if (ns > 100000000ull)
		mark = '@';
	else if (ns > 10000000ull)
		mark = '*';
	else if (ns > 1000000ull)
		mark = '#';
	else if (ns > 100000ull)
		mark = '!';
	else if (ns > 10000ull)
		mark = '+';
	snprintf(d, n, "%c %8llu.%03llu us", mark, (unsigned long long)(ns / 1000),
		 (unsigned long long)(ns % 1000));
}

#define INDENT_MAX 400

static const char *fname(uint32_t id, char *buf, size_t n)
{
	const char *nm = live_func_name(id);
	if (nm)
		return nm;
	snprintf(buf, n, "<id %u>", id);
	return buf;
}

/* Format the event S holds into c->line (consuming it, and its exit when it
 * is an entry whose function returned right away: a leaf). */
static void format_event(struct live_cursor *c, struct live_src *s)
{
	char *l = c->line;
	size_t cap = sizeof(c->line);
	int len = 0;
	if (s->lost) {
		len = snprintf(l, cap, " TID %d [LOST %llu EVENTS]\n", (int)s->b->tid,
			       (unsigned long long)s->lost);
		s->lost = 0;
	}
	const struct live_rec *r = &s->rec;
	unsigned t = rec_type(r), depth = rec_depth(r);
	unsigned ind = 2 * depth < INDENT_MAX ? 2 * depth : INDENT_MAX;
	char d[40], nb[64], pb[64];
	int tid = (int)s->b->tid;
	unsigned span = s->span;
	switch (t) {
	case LR_FUNC:
	case LR_MARKER:
		if (t == LR_MARKER && c->graph) {
			fmt_dur(d, sizeof(d), 0, 0);
			len += snprintf(l + len, cap - len, "%7d) %s |  %*s/* %.*s */\n", tid, d,
					ind, "", (int)s->text_len, s->text);
			break;
		}
		len += snprintf(l + len, cap - len, "%16.16s-%-7d %5llu.%06llu: ", buf_comm(s->b),
				tid, (unsigned long long)(r->ts / 1000000000ull),
				(unsigned long long)(r->ts % 1000000000ull / 1000));
		if (t == LR_MARKER)
			len += snprintf(l + len, cap - len, "tracing_mark_write: %.*s\n",
					(int)s->text_len, s->text);
		else
			len += snprintf(l + len, cap - len, "%s <-%s\n",
					fname(rec_id(r), nb, sizeof(nb)),
					sym_of((uintptr_t)r->arg, pb, sizeof(pb)));
		break;
	case LR_ENTRY: {
		struct live_rec nx;
		int leaf = s->pos + 1 < s->end && rec_read(s->b, s->pos + 1, &nx) == REC_OK &&
			   rec_type(&nx) == LR_EXIT && rec_depth(&nx) == depth &&
			   rec_id(&nx) == rec_id(r);
		fmt_dur(d, sizeof(d), leaf ? nx.arg : 0, leaf);
		len += snprintf(l + len, cap - len, "%7d) %s |  %*s%s()%s\n", tid, d, ind, "",
				fname(rec_id(r), nb, sizeof(nb)), leaf ? ";" : " {");
		if (leaf)
			span++;
		break;
	}
	case LR_EXIT:
	case LR_CALL:
		fmt_dur(d, sizeof(d), r->arg, 1);
		len += snprintf(l + len, cap - len, "%7d) %s |  %*s} /* %s */\n", tid, d, ind, "",
				fname(rec_id(r), nb, sizeof(nb)));
		break;
	}
	if (len >= (int)cap)
		len = (int)cap - 1;
	c->line_len = (size_t)len;
	c->line_off = 0;
	src_advance(c, s, span);
}

/* ---- cursors ------------------------------------------------------------- */

static int cursor_add(struct live_cursor *c, struct live_buf *b)
{
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 8;
		struct live_src *ns = realloc(c->src, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		c->src = ns;
		c->cap = nc;
	}
	struct live_src *s = &c->src[c->n++];
	memset(s, 0, offsetof(struct live_src, text));
	s->b = b;
	uint64_t head = buf_head(b);
	s->pos = c->consume ? (b->pipe > b->start ? b->pipe : b->start) : buf_first(b, head);
	s->end = head;
	if (!c->consume)
		b->refs++;
	return 0;
}

/* Current buffers (those of the current geometry), oldest thread first. */
static int cursor_fill(struct live_cursor *c)
{
	uint64_t gen = __atomic_load_n(&live_gen, __ATOMIC_RELAXED);
	size_t n = 0;
	struct live_buf *b;
	/* One snapshot of the head for both passes: writers push new buffers
	 * in front of it meanwhile (only this thread unlinks), so the list
	 * from it on does not change; a second load could see more. */
	struct live_buf *head = __atomic_load_n(&live_head, __ATOMIC_ACQUIRE);
	for (b = head; b; b = b->next)
		n++;
	struct live_buf **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (b = head; b; b = b->next)
		if (b->gen == gen)
			v[n++] = b;
	int err = 0;
	while (n-- && !err)
		err = cursor_add(c, v[n]);
	free(v);
	return err;
}

struct live_cursor *live_open(int consume, int graph)
{
	struct live_cursor *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->consume = consume;
	c->graph = graph;
	c->fork_gen = live_fork_gen;
	/* When recording, the session directory has everything: the in-memory
	 * copy is made only once somebody looks (trace_ctl_start()). */
	if (!__atomic_load_n(&live_enabled, __ATOMIC_RELAXED))
		__atomic_store_n(&live_enabled, 1, __ATOMIC_RELEASE);
	if (!consume) {
		__atomic_fetch_add(&live_paused, 1, __ATOMIC_SEQ_CST);
		if (cursor_fill(c)) {
			live_close(c);
			return NULL;
		}
	}
	return c;
}

void live_close(struct live_cursor *c)
{
	if (!c)
		return;
	if (!c->consume && c->fork_gen == live_fork_gen) {
		for (size_t i = 0; i < c->n; i++)
			c->src[i].b->refs--;
		__atomic_fetch_sub(&live_paused, 1, __ATOMIC_SEQ_CST);
	}
	free(c->src);
	free(c);
}

size_t live_read(struct live_cursor *c, char *buf, size_t cap)
{
	size_t done = 0;
	if (c->fork_gen != live_fork_gen)
		return 0;
	if (c->consume) {
		/* Threads come and go: look at the buffers of now. */
		c->n = 0;
		if (cursor_fill(c))
			return 0;
	}
	patch_lock(); /* names and objects stay put while we format */
	for (;;) {
		if (c->line_off < c->line_len) {
			size_t k = c->line_len - c->line_off;
			if (k > cap - done)
				k = cap - done;
			memcpy(buf + done, c->line + c->line_off, k);
			c->line_off += k;
			done += k;
			if (done == cap)
				break;
		}
		struct live_src *best = NULL;
		for (size_t i = 0; i < c->n; i++) {
			struct live_src *s = &c->src[i];
			if (src_fetch(c, s) && (!best || s->rec.ts < best->rec.ts))
				best = s;
		}
		if (!best)
			break;
		format_event(c, best);
	}
	patch_unlock();
	if (c->consume)
		for (size_t i = 0; i < c->n; i++)
			c->src[i].have = 0; /* fetched again next time */
	return done;
}

/* ---- state and statistics ------------------------------------------------- */

void live_counts(uint64_t *in_buffer, uint64_t *written)
{
	uint64_t gen = __atomic_load_n(&live_gen, __ATOMIC_RELAXED), in = 0, wr = 0;
	for (struct live_buf *b = __atomic_load_n(&live_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		if (b->gen != gen)
			continue;
		uint64_t head = buf_head(b);
		in += head - buf_first(b, head);
		wr += head - b->start;
	}
	*in_buffer = in;
	*written = wr;
}

void live_clear(void)
{
	__atomic_fetch_add(&live_epoch, 1, __ATOMIC_RELAXED);
	for (struct live_buf *b = __atomic_load_n(&live_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		b->start = buf_head(b);
		if (b->pipe < b->start)
			b->pipe = b->start;
	}
}

int live_set_size_kb(size_t kb)
{
	if (kb < LIVE_KB_MIN || kb > LIVE_KB_MAX)
		return -EINVAL;
	__atomic_store_n(&live_kb, kb, __ATOMIC_RELAXED);
	__atomic_fetch_add(&live_epoch, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&live_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

size_t live_size_kb(void)
{
	return __atomic_load_n(&live_kb, __ATOMIC_RELAXED);
}

void live_for_each_thread(void (*cb)(const struct live_thread_stats *st, void *data), void *data)
{
	uint64_t gen = __atomic_load_n(&live_gen, __ATOMIC_RELAXED);
	for (struct live_buf *b = __atomic_load_n(&live_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		if (b->gen != gen)
			continue;
		uint64_t head = buf_head(b), n = b->mask + 1;
		uint64_t in = head - buf_first(b, head);
		struct live_thread_stats st = {
		    .tid = b->tid,
		    .exited = (int)__atomic_load_n(&b->retired, __ATOMIC_ACQUIRE),
		    .entries = in,
		    .overrun = head > n ? head - n : 0,
		    .bytes = in * sizeof(struct live_rec),
		    .written = head,
		    .read = b->read,
		};
		cb(&st, data);
	}
}

void live_reap(void)
{
	uint64_t gen = __atomic_load_n(&live_gen, __ATOMIC_RELAXED);
	unsigned kept = 0;
	struct live_buf **pp = &live_head, *b;
	/* Newest first: the oldest retired buffers go beyond LIVE_KEEP_DEAD. */
	while ((b = __atomic_load_n(pp, __ATOMIC_ACQUIRE))) {
		int retired = (int)__atomic_load_n(&b->retired, __ATOMIC_ACQUIRE);
		int drop = 0;
		if (retired && !b->refs) {
			uint64_t head = buf_head(b);
			drop = b->gen != gen || buf_first(b, head) >= head || b->pipe >= head ||
			       kept >= LIVE_KEEP_DEAD;
			if (!drop)
				kept++;
		}
		if (!drop) {
			pp = &b->next;
			continue;
		}
		/* Unlink. Pushers only ever change live_head: CAS there. */
		if (pp == &live_head) {
			struct live_buf *exp = b;
			if (!__atomic_compare_exchange_n(&live_head, &exp, b->next, 0,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				continue; /* a push came first: b is further down now */
		} else {
			__atomic_store_n(pp, b->next, __ATOMIC_RELEASE);
		}
		munmap(b, b->map_size);
	}
}
