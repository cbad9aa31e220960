/* SPDX-License-Identifier: MIT */
/*
 * t-ring.c - tests of the per-thread ring buffer (lib/ring/ring.c), built with
 * lib/ring/ring.c and lib/core/log.c compiled in (their symbols are hidden in the
 * runtime) by tests/sh/ring-*.sh. One mode per run; TAP output.
 *
 *   t-ring basic DIR          5 threads x every event type, decode + check
 *   t-ring nested DIR [PS N]  a thread writes while a per-thread timer signal
 *                             handler writes in the middle of its events
 *   t-ring lost DIR [nest]    2 pages of 4 KiB, consumer stalled: exact losses
 *   t-ring overwrite DIR [nest]  the same as a flight recorder: newest kept
 *   t-ring threads DIR        64 short threads: flushed and freed at exit
 *   t-ring fork DIR           fork: the child's own streams, lazy consumer
 *   t-ring forkwin DIR        fork: the forking thread's events of the window
 *   t-ring shutdown DIR       shutdown (twice, concurrently) under writers
 *   t-ring diskfull DIR       run under a file size limit (ulimit -f)
 *   t-ring reinit DIR         record again after shutdown; stream names
 *   t-ring clock              trace clock: monotonic, close to CLOCK_MONOTONIC
 *   t-ring readers DIR [disk] readers besides the consumer (ring_read.c): a fast
 *                             and a slow trace_pipe cursor and snapshots while
 *                             a thread writes; in memory (overwrite), or with
 *                             `disk` into DIR too (no-overwrite)
 *   t-ring dump DIR           print every event: "TS NAME FIELDS" (ring-ctf.sh)
 *
 * Env T_RING_SAN=tsan: signals are delivered late under TSan, so nesting is
 * not required to happen there.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../unit/tap.h"
#include "decode.h"
#include "internal.h"
#include "ring.h"
#include "ring_fast.h"

/* The core's thread state, which the ring's consumer thread marks (hooks.h):
 * defined by the runtime, here by ring.c's own program. */
__thread struct dft_thread dft_self;

static char g_dir[PATH_MAX], g_ctf[PATH_MAX + 8], g_info[PATH_MAX + 8];
static uint8_t g_uuid[16];

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static uint64_t mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int setup(const char *dir, size_t ps, size_t pages, int overwrite)
{
	snprintf(g_dir, sizeof(g_dir), "%s", dir);
	snprintf(g_ctf, sizeof(g_ctf), "%s/ctf", dir);
	snprintf(g_info, sizeof(g_info), "%s/info", dir);
	mkdir(g_dir, 0755);
	mkdir(g_ctf, 0755);
	FILE *f = fopen(g_info, "w");
	if (!f)
		return -errno;
	fprintf(f, "version: 1\n");
	fclose(f);
	struct ring_config c = {.ctf_dir = g_ctf,
				.info_path = g_info,
				.page_size = ps,
				.pages = pages,
				.overwrite = overwrite};
	return ring_init(&c);
}

/* setup() as a test's first check; nonzero when it passed. */
static int setup_ok(const char *dir, size_t ps, size_t pages, int overwrite)
{
	int err = setup(dir, ps, pages, overwrite);
	return ok(err == 0, "ring_init: %s", strerror(-err));
}

/* ---- reading the results back ------------------------------------------ */

#define MAXS 256
struct sres {
	char name[300];
	struct dec_stream st;
	int rc;
	uint64_t lost; /* from the info file */
	/* filled by the mode's callback */
	uint64_t a_n, a_next, a_first, a_tsum, b_n, b_next, b_first, x_n, x_last;
	int bad;
	char why[300];
};
static struct sres g_s[MAXS];
static int g_ns;

/* The events the info file says thread TID of PID lost (PID 0: every
 * thread), in *LINES lines (LINES may be NULL). */
static uint64_t info_lost(int pid, int tid, int *lines)
{
	FILE *f = fopen(g_info, "r");
	char line[256];
	uint64_t n = 0;
	int nl = 0;
	while (f && fgets(line, sizeof(line), f)) {
		int p, t;
		unsigned long long v;
		if (sscanf(line, "lost: %d %d %llu", &p, &t, &v) == 3 &&
		    (!pid || (p == pid && t == tid))) {
			n += v;
			nl++;
		}
	}
	if (f)
		fclose(f);
	if (lines)
		*lines = nl;
	return n;
}

static uint64_t info_lost_total(void)
{
	return info_lost(0, 0, NULL);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct sres *)a)->name, ((const struct sres *)b)->name);
}

/* Decodes every stream of g_ctf with CB (arg: the struct sres). */
static int scan(dec_cb cb)
{
	DIR *d = opendir(g_ctf);
	struct dirent *e;
	g_ns = 0;
	if (!d)
		return -1;
	if (dec_metadata_uuid(g_ctf, g_uuid)) {
		closedir(d);
		return -1;
	}
	while ((e = readdir(d)) && g_ns < MAXS) {
		if (strncmp(e->d_name, "stream-", 7))
			continue;
		struct sres *s = &g_s[g_ns++];
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", e->d_name);
	}
	closedir(d);
	qsort(g_s, (size_t)g_ns, sizeof(g_s[0]), by_name);
	for (int i = 0; i < g_ns; i++) {
		struct sres *s = &g_s[i];
		char path[PATH_MAX + 320];
		snprintf(path, sizeof(path), "%s/%s", g_ctf, s->name);
		s->rc = dec_file(path, g_uuid, &s->st, cb, s);
		int lines;
		s->lost = info_lost(s->st.pid, s->st.tid, &lines);
	}
	return g_ns;
}

static struct sres *find_tid(int tid)
{
	for (int i = 0; i < g_ns; i++)
		if (g_s[i].st.tid == tid)
			return &g_s[i];
	return NULL;
}

static int all_valid(void)
{
	for (int i = 0; i < g_ns; i++)
		if (g_s[i].rc) {
			diag("%s", g_s[i].st.err);
			return 0;
		}
	return 1;
}

__attribute__((format(printf, 2, 3))) static void sbad(struct sres *s, const char *fmt, ...)
{
	if (s->bad++)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
}

/* ---- writing ------------------------------------------------------------ */

/* The parent's offset of the function_near event SEQ: from -2^25 to 2^25-1. */
static int64_t near_off(uint64_t seq)
{
	return (int64_t)((seq * 40503u) % (1u << 26)) - (1 << 25);
}

/* Event SEQ of the basic pattern; returns 1 if written. */
static int emit_pattern(uint64_t seq, uint64_t *tsum)
{
	uint64_t ts;
	uint32_t f = (uint32_t)seq;
	uint8_t *p;
	char text[32];
	switch (seq % 8) {
	case 0:
		if (seq % 16 == 8) { /* entry16: the low 16 bits of SEQ */
			uint16_t h = (uint16_t)f;
			p = ring_event_begin(RING_EV_ENTRY16, 2, &ts);
			if (p)
				memcpy(p, &h, 2);
			break;
		}
		p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
		if (p)
			memcpy(p, &f, 4);
		break;
	case 7: { /* function_near: the low bits of SEQ, an offset of every size */
		uint64_t near, site = 0x10000000 + seq;
		if (!fmt_near_pack(f & FMT_NEAR_FUNC_MAX, site, site + (uint64_t)near_off(seq),
				   &near))
			return 0;
		p = ring_event_begin(RING_EV_FUNCTION_NEAR, 6, &ts);
		if (p)
			memcpy(p, &near, 6);
		break;
	}
	case 1:
		p = ring_event_begin(RING_EV_EXIT, 0, &ts);
		break;
	case 2:
	case 3: {
		uint64_t v = seq % 8 == 2 ? seq * 3 : seq + 5;
		p = ring_event_begin(seq % 8 == 2 ? RING_EV_FUNCTION : RING_EV_CALL, 12, &ts);
		if (p) {
			memcpy(p, &f, 4);
			memcpy(p + 4, &v, 8);
		}
		break;
	}
	case 4:
		p = ring_event_begin(RING_EV_LOST, 4, &ts);
		if (p)
			memcpy(p, &f, 4);
		break;
	case 5: {
		int n = snprintf(text, sizeof(text), "m%llu", (unsigned long long)seq) + 1;
		p = ring_event_begin(RING_EV_MARKER, (size_t)n, &ts);
		if (p)
			memcpy(p, text, (size_t)n);
		break;
	}
	default:
		p = ring_event_begin(RING_EV_EXIT_DEPTH, 4, &ts);
		if (p)
			memcpy(p, &f, 4);
		break;
	}
	if (!p)
		return 0;
	ring_event_end(p);
	*tsum += ts;
	return 1;
}

static const unsigned pattern_id[8] = {0, 1, 2, 3, 13, 5, 8, 6};

/* Checks events of the basic pattern. Every event but exit carries its
 * sequence number, so after a loss the check resynchronises; gaps are
 * counted in b_n (allowed only where losses are reported). */
static void check_pattern(const struct dec_event *ev, void *arg)
{
	struct sres *s = arg;
	uint64_t seq;
	s->a_n++;
	s->a_tsum += ev->ts;
	switch (ev->raw_id == FMT_EV_ENTRY16 ? 4 : ev->id) {
	case 1: /* exit: seq 8k+1 */
		seq = s->a_next;
		if (seq % 8 != 1) {
			seq += (9 - seq % 8) % 8;
			s->b_n++;
		}
		s->a_next = seq + 1;
		return;
	case 5:
		seq = strtoull(ev->text + 1, NULL, 10);
		break;
	case 6: /* the low 22 bits of SEQ: the rest from the next expected */
		seq = (s->a_next & ~(uint64_t)FMT_NEAR_FUNC_MAX) | ev->func;
		if (seq < s->a_next)
			seq += FMT_NEAR_FUNC_MAX + 1;
		break;
	case 4: /* entry16: the low 16 bits of SEQ, likewise */
		seq = (s->a_next & ~(uint64_t)FMT_ENTRY16_MAX) | ev->func;
		if (seq < s->a_next)
			seq += FMT_ENTRY16_MAX + 1;
		break;
	default:
		seq = ev->func;
		break;
	}
	if (seq != s->a_next) {
		if (seq < s->a_next || seq >> 32)
			sbad(s, "event %llu after %llu", (unsigned long long)seq,
			     (unsigned long long)s->a_next);
		s->b_n++;
	}
	s->a_next = seq + 1;
	unsigned want = seq % 16 == 8 ? FMT_EV_ENTRY16 : pattern_id[seq % 8];
	if (ev->raw_id != want) {
		sbad(s, "event %llu: id %u, expected %u", (unsigned long long)seq, ev->raw_id,
		     want);
		return;
	}
	char text[32];
	switch (ev->id) {
	case 2:
	case 3:
		if (ev->u64 != (ev->id == 2 ? seq * 3 : seq + 5))
			sbad(s, "event %llu: payload %llu", (unsigned long long)seq,
			     (unsigned long long)ev->u64);
		break;
	case 6:
		if ((int64_t)ev->u64 != near_off(seq))
			sbad(s, "event %llu: parent offset %lld", (unsigned long long)seq,
			     (long long)ev->u64);
		break;
	case 5:
		snprintf(text, sizeof(text), "m%llu", (unsigned long long)seq);
		if (strcmp(ev->text, text))
			sbad(s, "event %llu: marker %s", (unsigned long long)seq, ev->text);
		break;
	}
}

/* ---- basic -------------------------------------------------------------- */

/* T_RING_SMALL=1 (ring-ctf.sh): 10 times fewer events, for babeltrace2 */
static uint64_t scale(uint64_t n)
{
	const char *e = getenv("T_RING_SMALL");
	return e && *e == '1' ? n / 10 : n;
}

#define BASIC_N scale(300000)
struct wres {
	pid_t tid;
	uint64_t written, tsum, attempted;
};

static void *basic_thread(void *arg)
{
	struct wres *w = arg;
	w->tid = gettid_();
	for (uint64_t i = 0; i < BASIC_N; i++)
		w->written += (uint64_t)emit_pattern(i, &w->tsum);
	w->attempted = BASIC_N;
	ring_thread_exit();
	return NULL;
}

static void stats_cb(const struct ring_thread_stats *st, void *data)
{
	(*(int *)data)++;
	(void)st;
}

/* Descriptors of this process open on files of the trace directory. */
static int fds_in_trace(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d))) {
		char link[300], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		n += !strncmp(target, g_ctf, strlen(g_ctf)) && strstr(target, "/stream-");
	}
	if (d)
		closedir(d);
	return n;
}

static int t_basic(const char *dir)
{
	tap_plan(8);
	if (!setup_ok(dir, 0, 0, 0))
		return 1;
	struct wres w[5] = {{0}};
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, basic_thread, &w[i + 1]);
	w[0].tid = gettid_();
	for (uint64_t i = 0; i < BASIC_N; i++)
		w[0].written += (uint64_t)emit_pattern(i, &w[0].tsum);
	int seen = 0;
	int n = ring_for_each_thread(stats_cb, &seen);
	ok(n >= 1 && n == seen, "ring_for_each_thread reports %d thread buffers", n);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	int fds = fds_in_trace();
	ok(fds <= 1, "the consumer keeps no stream file open between passes (%d open now)", fds);
	ring_shutdown();
	ring_shutdown(); /* idempotent */
	uint64_t ts;
	ok(ring_event_begin(RING_EV_EXIT, 0, &ts) == NULL, "no event after ring_shutdown");
	scan(check_pattern);
	ok(all_valid() && g_ns == 5, "5 valid streams (%d)", g_ns);
	int good = 1;
	uint64_t lost = 0;
	for (int i = 0; i < 5; i++) {
		struct sres *s = find_tid(w[i].tid);
		if (!s || s->bad || s->a_n != w[i].written || s->a_n + s->lost != BASIC_N ||
		    s->a_tsum != w[i].tsum || s->st.discarded != s->lost || (s->b_n && !s->lost)) {
			good = 0;
			if (s)
				diag("tid %d: %llu events of %llu, %s, discarded %llu, lost %llu",
				     w[i].tid, (unsigned long long)s->a_n,
				     (unsigned long long)w[i].written, s->bad ? s->why : "intact",
				     (unsigned long long)s->st.discarded,
				     (unsigned long long)s->lost);
			else
				diag("tid %d: no stream", w[i].tid);
		}
		if (s)
			lost += s->lost;
	}
	ok(good,
	   "every thread's events intact, in order, timestamps as returned; written + lost "
	   "== attempted (%llu lost: the consumer shares 2 cores with 5 writers)",
	   (unsigned long long)lost);
	uint64_t c = 0, x = 0;
	for (int i = 0; i < g_ns; i++) {
		c += g_s[i].st.compact;
		x += g_s[i].st.extended;
	}
	ok(c > x, "mostly compact headers (%llu compact, %llu extended)", (unsigned long long)c,
	   (unsigned long long)x);
	ok(info_lost_total() == lost, "the info file's lost lines add up (%llu)",
	   (unsigned long long)info_lost_total());
	return tap_done();
}

/* ---- nested (signal handler writes in the middle of events) -------------- */

static volatile sig_atomic_t in_event;
static volatile uint64_t h_attempted, h_written, h_tsum, h_nested, h_seq;

static void nest_handler(int sig)
{
	(void)sig;
	int saved = errno;
	uint64_t ts, seq = h_seq++;
	if (in_event)
		h_nested++;
	h_attempted++;
	uint8_t *p = ring_event_begin(RING_EV_FUNCTION, 12, &ts);
	if (p) {
		uint32_t f = 0x5EED;
		memcpy(p, &f, 4);
		memcpy(p + 4, (const void *)&seq, 8);
		ring_event_end(p);
		h_written++;
		h_tsum += ts;
	}
	if (seq % 4 == 0) {
		/* an extended-header event too (id 8) */
		h_attempted++;
		p = ring_event_begin(RING_EV_EXIT_DEPTH, 4, &ts);
		if (p) {
			uint32_t d = (uint32_t)seq;
			memcpy(p, &d, 4);
			ring_event_end(p);
			h_written++;
			h_tsum += ts;
		}
	}
	errno = saved;
}

static void check_nested(const struct dec_event *ev, void *arg)
{
	struct sres *s = arg;
	s->a_tsum += ev->ts;
	if (ev->id == RING_EV_ENTRY) {
		if (s->a_n && ev->func < s->a_next)
			sbad(s, "main event %u after %llu", ev->func,
			     (unsigned long long)s->a_next);
		if (s->a_n && ev->func > s->a_next && getenv("T_RING_GAPS"))
			diag("gap: main %llu..%u missing at ts %llu", (unsigned long long)s->a_next,
			     ev->func - 1, (unsigned long long)ev->ts);
		if (!s->a_n)
			s->a_first = ev->func;
		s->a_next = (uint64_t)ev->func + 1;
		s->a_n++;
	} else if (ev->id == RING_EV_FUNCTION) {
		/* handler invocation SEQ writes function(SEQ), then for SEQ % 4 == 0
		 * exit_depth(SEQ): both kinds strictly in order, and an
		 * exit_depth never before the function of its invocation (which
		 * may be lost) */
		if (ev->func != 0x5EED)
			sbad(s, "handler event with func %#x", ev->func);
		if (s->b_n && (ev->u64 < s->b_next || (s->x_n && ev->u64 <= s->x_last)))
			sbad(s, "handler event %llu out of order", (unsigned long long)ev->u64);
		if (!s->b_n)
			s->b_first = ev->u64;
		s->b_next = ev->u64 + 1;
		s->b_n++;
	} else if (ev->id == RING_EV_EXIT_DEPTH) {
		if (ev->compact)
			sbad(s, "id 8 with a compact header");
		if (ev->func % 4 || (s->b_n && ev->func + 1 < s->b_next) ||
		    (s->x_n && ev->func <= s->x_last))
			sbad(s, "exit_depth %u out of order (handler event %llu before)", ev->func,
			     (unsigned long long)s->b_next - 1);
		s->x_last = ev->func;
		s->x_n++;
		s->b_n++;
	} else {
		sbad(s, "unexpected event id %u", ev->id);
	}
}

/* Writes ENTRY(seq) events; a SIGEV_THREAD_ID timer's handler writes in
 * the middle. Stops after MIN events once enough nesting was seen. */
static void nested_run(uint64_t min, uint64_t max, uint64_t *written, uint64_t *attempted,
		       uint64_t *tsum, long period_ns)
{
	const char *san = getenv("T_RING_SAN");
	uint64_t want_nested = 200;
	if (san && !strcmp(san, "tsan")) {
		/* TSan runs handlers late and slowly: fewer signals, no minimum */
		want_nested = 0;
		period_ns = 500000;
		min /= 4;
	}
	struct sigaction sa = {.sa_handler = nest_handler, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN, &sa, NULL);
	struct sigevent sev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN};
	sev._sigev_un._tid = gettid_();
	timer_t tm;
	timer_create(CLOCK_MONOTONIC, &sev, &tm);
	struct itimerspec its = {.it_value = {0, period_ns}, .it_interval = {0, period_ns}};
	timer_settime(tm, 0, &its, NULL);
	uint64_t i;
	for (i = 0; i < max && (i < min || h_nested < want_nested); i++) {
		uint64_t ts;
		uint32_t f = (uint32_t)i;
		in_event = 1;
		uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
		if (p) {
			/* widen the window a handler can hit */
			for (volatile int k = 0; k < 8; k++)
				;
			memcpy(p, &f, 4);
			ring_event_end(p);
			(*written)++;
			*tsum += ts;
		}
		in_event = 0;
	}
	*attempted = i;
	struct itimerspec off = {{0, 0}, {0, 0}};
	timer_settime(tm, 0, &off, NULL);
	timer_delete(tm);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* a last pending one */
}

static int t_nested(const char *dir, size_t ps, size_t pages)
{
	tap_plan(5);
	if (!setup_ok(dir, ps, pages, 0))
		return 1;
	uint64_t written = 0, attempted = 0, tsum = 0;
	pid_t tid = gettid_();
	nested_run(scale(2000000), 400000000, &written, &attempted, &tsum, 20000);
	ring_shutdown();
	diag("main: %llu events written of %llu; handler: %llu of %llu, %llu inside an event",
	     (unsigned long long)written, (unsigned long long)attempted,
	     (unsigned long long)h_written, (unsigned long long)h_attempted,
	     (unsigned long long)h_nested);
	const char *san = getenv("T_RING_SAN");
	ok(h_nested > 0 || (san && !strcmp(san, "tsan")),
	   "the handler ran in the middle of events (%llu times)", (unsigned long long)h_nested);
	scan(check_nested);
	struct sres *s = find_tid(tid);
	ok(all_valid() && s && g_ns == 1,
	   "one valid stream: headers, sizes, timestamps never decrease");
	if (!s)
		return tap_done();
	ok(!s->bad, "every event intact and in order for both writers%s%s", s->bad ? ": " : "",
	   s->why);
	uint64_t lost = s->lost;
	ok(s->a_n == written && s->b_n == h_written && s->a_tsum == tsum + h_tsum &&
	       written + h_written + lost == attempted + h_attempted && s->st.discarded == lost,
	   "counts match: %llu + %llu written + %llu lost == %llu attempted; timestamps as "
	   "returned",
	   (unsigned long long)s->a_n, (unsigned long long)s->b_n, (unsigned long long)lost,
	   (unsigned long long)(attempted + h_attempted));
	return tap_done();
}

/* ---- exact losses: no-overwrite and overwrite, consumer stalled ---------- */

static int t_lost(const char *dir, int overwrite, int nest)
{
	tap_plan(6);
	if (!getenv("DYNFTRACE_RING_TEST_STALL"))
		setenv("DYNFTRACE_RING_TEST_STALL", "1", 1);
	if (!setup_ok(dir, 4096, 2, overwrite))
		return 1;
	uint64_t written = 0, attempted = 0, tsum = 0;
	pid_t tid = gettid_();
	if (nest) {
		nested_run(200000, 20000000, &written, &attempted, &tsum, 20000);
	} else {
		for (uint64_t i = 0; i < 20000; i++) {
			uint64_t ts;
			uint32_t f = (uint32_t)i;
			uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
			if (p) {
				memcpy(p, &f, 4);
				ring_event_end(p);
				written++;
				tsum += ts;
			}
		}
		attempted = 20000;
	}
	ring_shutdown();
	scan(check_nested);
	struct sres *s = find_tid(tid);
	ok(all_valid() && s && g_ns == 1, "one valid stream");
	if (!s)
		return tap_done();
	uint64_t total = attempted + h_attempted, got = s->a_n + s->b_n;
	ok(!s->bad, "events intact and in order%s%s", s->bad ? ": " : "", s->why);
	ok(got + s->lost == total && s->lost > 0,
	   "exact: %llu written + %llu lost (info) == %llu attempted", (unsigned long long)got,
	   (unsigned long long)s->lost, (unsigned long long)total);
	if (overwrite)
		ok(s->st.first_discarded == s->lost && s->st.discarded == s->lost,
		   "events_discarded of the packets: %llu (first), %llu (last)",
		   (unsigned long long)s->st.first_discarded, (unsigned long long)s->st.discarded);
	else
		ok(s->st.discarded == s->lost, "last packet's events_discarded = %llu",
		   (unsigned long long)s->st.discarded);
	if (overwrite)
		ok(s->a_next == attempted && s->a_n == s->a_next - s->a_first &&
		       (!nest || !s->b_n || s->b_next == h_seq),
		   "the newest are kept: main %llu..%llu of %llu, contiguous",
		   (unsigned long long)s->a_first, (unsigned long long)s->a_next - 1,
		   (unsigned long long)attempted);
	else
		ok(s->a_first == 0 && s->a_n == s->a_next,
		   "the oldest are kept: main %llu..%llu (%llu events), contiguous from 0",
		   (unsigned long long)s->a_first, (unsigned long long)s->a_next - 1,
		   (unsigned long long)s->a_n);
	return tap_done();
}

/* ---- no-overwrite: a full ring drops smaller events too ------------------ */

static void check_plug(const struct dec_event *ev, void *arg)
{
	struct sres *s = arg;
	if (ev->id == RING_EV_MARKER) {
		uint64_t seq = strtoull(ev->text + 1, NULL, 10);
		if (seq != s->a_next)
			sbad(s, "marker %llu after %llu", (unsigned long long)seq,
			     (unsigned long long)s->a_next);
		s->a_next = seq + 1;
		s->a_n++;
	} else if (ev->id == RING_EV_ENTRY) {
		s->b_n++;
	} else {
		sbad(s, "unexpected event id %u", ev->id);
	}
}

/* Markers of 121 bytes fill the ring (no consumer) until one does not fit;
 * 6-byte entries that would still fit the page must be dropped too, as the
 * kernel pads the tail page: the oldest are kept, without holes. */
static int t_plug(const char *dir)
{
	tap_plan(4);
	if (!getenv("DYNFTRACE_RING_TEST_STALL"))
		setenv("DYNFTRACE_RING_TEST_STALL", "1", 1);
	if (!setup_ok(dir, 4096, 2, 0))
		return 1;
	uint64_t markers = 0, entries = 0, first_drop = 0;
	pid_t tid = gettid_();
	char text[128];
	for (uint64_t i = 0; i < 1000; i++) {
		uint64_t ts;
		uint8_t *p;
		if (!first_drop) {
			memset(text, 'x', sizeof(text));
			int n = snprintf(text, sizeof(text), "m%llu", (unsigned long long)i);
			text[n] = ' ';
			text[120] = 0;
			p = ring_event_begin(RING_EV_MARKER, 121, &ts);
			if (p)
				memcpy(p, text, 121);
			else
				first_drop = i;
		} else {
			uint32_t f = (uint32_t)i;
			p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
			if (p)
				memcpy(p, &f, 4);
		}
		if (p) {
			ring_event_end(p);
			markers += !first_drop;
			entries += !!first_drop;
		}
	}
	ring_shutdown();
	scan(check_plug);
	struct sres *s = find_tid(tid);
	ok(all_valid() && s && g_ns == 1 && !s->bad, "one valid stream%s%s",
	   s && s->bad ? ": " : "", s ? s->why : "");
	if (!s)
		return tap_done();
	ok(first_drop > 0 && entries == 0 && s->b_n == 0,
	   "after the first drop (marker %llu), no smaller event was kept (%llu written, %llu "
	   "read)",
	   (unsigned long long)first_drop, (unsigned long long)entries, (unsigned long long)s->b_n);
	ok(s->a_n == markers && s->a_next == first_drop && s->lost == 1000 - markers,
	   "markers 0..%llu kept, %llu lost", (unsigned long long)s->a_next - 1,
	   (unsigned long long)s->lost);
	return tap_done();
}

/* ---- threads: flushed and freed when they exit -------------------------- */

#define TH_N  64
#define TH_EV 3000
static struct wres th_w[TH_N];
static void *short_thread(void *arg)
{
	struct wres *w = arg;
	w->tid = gettid_();
	for (uint64_t i = 0; i < TH_EV; i++)
		w->written += (uint64_t)emit_pattern(i, &w->tsum);
	/* every 8th thread forgets to say it exits: the liveness check finds it */
	if ((w - th_w) % 8)
		ring_thread_exit();
	return NULL;
}

static int count_streams(void)
{
	DIR *d = opendir(g_ctf);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "stream-", 7);
	if (d)
		closedir(d);
	return n;
}

static int t_threads(const char *dir)
{
	tap_plan(4);
	if (!setup_ok(dir, 16384, 4, 0))
		return 1;
	struct wres *w = th_w;
	for (int wave = 0; wave < TH_N / 8; wave++) {
		pthread_t th[8];
		for (int i = 0; i < 8; i++)
			pthread_create(&th[i], NULL, short_thread, &w[wave * 8 + i]);
		for (int i = 0; i < 8; i++)
			pthread_join(th[i], NULL);
	}
	/* The consumer frees a buffer once its thread is gone: poll (bounded). */
	int left = -1;
	for (int i = 0; i < 60000; i++) {
		left = ring_for_each_thread(NULL, NULL);
		if (left == 0)
			break;
		struct timespec t = {0, 1000000};
		nanosleep(&t, NULL);
	}
	ok(left == 0,
	   "every exited thread's buffer was flushed and freed before shutdown (%d left)", left);
	int files = count_streams();
	scan(check_pattern);
	int good = all_valid() && files == TH_N;
	for (int i = 0; i < TH_N; i++) {
		struct sres *s = find_tid(w[i].tid);
		if (!s || s->bad || s->a_n != w[i].written || s->a_n + s->lost != TH_EV ||
		    s->a_tsum != w[i].tsum || (s->b_n && !s->lost)) {
			good = 0;
			diag("thread %d: %s", w[i].tid,
			     s ? (s->bad ? s->why : "count") : "no stream");
		}
	}
	ok(good, "%d streams written while recording, each with written + lost == attempted (%d)",
	   TH_N, files);
	ring_shutdown();
	ok(count_streams() == TH_N, "no more streams after shutdown");
	return tap_done();
}

/* ---- fork ---------------------------------------------------------------- */

static void write_entries(uint32_t from, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ts;
		uint32_t f = from + i;
		uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
		if (p) {
			memcpy(p, &f, 4);
			ring_event_end(p);
		}
	}
}

static void check_entries(const struct dec_event *ev, void *arg)
{
	struct sres *s = arg;
	if (ev->id != RING_EV_ENTRY) {
		sbad(s, "id %u", ev->id);
		return;
	}
	if (!s->a_n)
		s->a_first = ev->func;
	else if (ev->func != s->a_next)
		sbad(s, "func %u after %llu", ev->func, (unsigned long long)s->a_next - 1);
	s->a_next = (uint64_t)ev->func + 1;
	s->a_n++;
}

/* Every function id of a stream, in order, and whether time went back. */
struct seen {
	uint32_t f[4096];
	size_t n;
	uint64_t last_ts;
	int back;
};
static struct seen seen_par, seen_chi; /* this process's stream, the other's */

static void collect(const struct dec_event *ev, void *arg)
{
	struct sres *s = arg;
	struct seen *w = s->st.pid == getpid() ? &seen_par : &seen_chi;
	if (ev->id != RING_EV_ENTRY)
		return;
	if (ev->ts < w->last_ts)
		w->back++;
	w->last_ts = ev->ts;
	if (w->n < 4096)
		w->f[w->n++] = ev->func;
}

/* Are W's ids FROM, FROM + 1, ... for N of them, from position *AT? */
static int run_of(const struct seen *w, size_t *at, uint32_t from, size_t n)
{
	for (size_t i = 0; i < n; i++, (*at)++)
		if (*at >= w->n || w->f[*at] != from + i)
			return 0;
	return 1;
}

/*
 * The fork's window: from ring_atfork_prepare to the parent's handler the
 * forking thread has no buffer (the child shares them). What it records
 * meanwhile is kept and written by the parent's handler, in order and with
 * its own times; the child's own events of the window are counted lost in
 * its first buffer; a window with more than the records hold loses the
 * rest, counted.
 */
static int t_forkwin(const char *dir)
{
	tap_plan(6);
	if (!setup_ok(dir, 0, 0, 0))
		return 1;
	write_entries(0, 100);
	ring_atfork_prepare();
	write_entries(100, 10); /* the parent's, before the fork */
	pid_t c = fork();
	if (c == 0) {
		write_entries(5000000, 7); /* the child's, before its handler */
		ring_atfork_child();
		char img[32];
		snprintf(img, sizeof(img), "%d.7", (int)getpid());
		ring_set_img(img);
		write_entries(1000000, 50);
		ring_shutdown();
		_exit(0);
	}
	write_entries(110, 10); /* the parent's, after the fork */
	ring_atfork_parent();
	write_entries(120, 80);
	ring_atfork_prepare(); /* a window with more than the records hold */
	write_entries(200, 1000);
	ring_atfork_parent();
	write_entries(1200, 50);
	int st;
	waitpid(c, &st, 0);
	ring_shutdown();
	ok(WIFEXITED(st) && !WEXITSTATUS(st), "the child exits cleanly");
	memset(&seen_par, 0, sizeof(seen_par));
	memset(&seen_chi, 0, sizeof(seen_chi));
	scan(collect);
	const struct seen *par = &seen_par, *chi = &seen_chi;
	struct sres *p = NULL, *ch = NULL;
	for (int i = 0; i < g_ns; i++)
		*(g_s[i].st.pid == getpid() ? &p : &ch) = &g_s[i];
	ok(all_valid() && g_ns == 2 && p && ch, "two valid streams: parent and child");
	size_t at = 0, kept = 0;
	int seq = run_of(par, &at, 0, 200);
	while (at < par->n && par->f[at] == 200 + kept)
		at++, kept++;
	seq = seq && run_of(par, &at, 1200, 50) && at == par->n;
	uint64_t plost = p ? info_lost(p->st.pid, p->st.tid, NULL) : 0;
	ok(seq && !par->back && kept > 0 && kept < 1000 && plost == 1000 - kept,
	   "parent: its 20 events of a fork's window in place, in order, times never back; of "
	   "1,000 in one window %zu kept, %llu counted lost (%zu events)",
	   kept, (unsigned long long)plost, par->n);
	at = 0;
	uint64_t clost = ch ? info_lost(ch->st.pid, ch->st.tid, NULL) : 0;
	ok(run_of(chi, &at, 1000000, 50) && at == chi->n && clost == 7,
	   "child: its own 50 events; the 7 of its window counted lost (%llu)",
	   (unsigned long long)clost);
	ok(ch && ch->st.first_discarded == 7, "child: its first packet says 7 discarded (%llu)",
	   ch ? (unsigned long long)ch->st.first_discarded : 0ull);
	return tap_done();
}

static int t_fork(const char *dir)
{
	tap_plan(5);
	if (!setup_ok(dir, 0, 0, 0))
		return 1;
	write_entries(0, 3000);
	pid_t c1 = fork();
	if (c1 == 0) {
		ring_atfork_child();
		char img[32];
		snprintf(img, sizeof(img), "%d.7", (int)getpid());
		ring_set_img(img); /* as the runtime names a child's image */
		write_entries(1000000, 5000);
		ring_shutdown();
		_exit(0);
	}
	pid_t c2 = fork();
	if (c2 == 0) {
		ring_atfork_child();
		ring_shutdown(); /* wrote nothing */
		_exit(0);
	}
	write_entries(3000, 3000);
	int st1, st2;
	waitpid(c1, &st1, 0);
	waitpid(c2, &st2, 0);
	ring_shutdown();
	ok(WIFEXITED(st1) && !WEXITSTATUS(st1) && WIFEXITED(st2) && !WEXITSTATUS(st2),
	   "children exit cleanly");
	scan(check_entries);
	struct sres *p = NULL, *c = NULL;
	int others = 0;
	for (int i = 0; i < g_ns; i++) {
		if (g_s[i].st.pid == getpid())
			p = &g_s[i];
		else if (g_s[i].st.pid == c1)
			c = &g_s[i];
		else
			others++;
	}
	ok(all_valid() && p && c && !others && g_ns == 2, "two valid streams: parent and child 1");
	ok(p && !p->bad && p->a_first == 0 && p->a_n == 6000,
	   "parent: its 6000 events, in order (%llu, %s)", p ? (unsigned long long)p->a_n : 0ull,
	   p && p->bad ? p->why : "-");
	char want[64];
	snprintf(want, sizeof(want), "stream-%d.7-%d", (int)c1, (int)c1);
	ok(c && !c->bad && c->a_first == 1000000 && c->a_n == 5000 && !strcmp(c->name, want),
	   "child: only its own 5000 events, in %s (%llu, %s, %s)", want,
	   c ? (unsigned long long)c->a_n : 0ull, c ? c->name : "-", c && c->bad ? c->why : "-");
	return tap_done();
}

/* ---- shutdown with writers running ------------------------------------- */

static volatile int sd_stop;
struct sdw {
	pid_t tid;
	uint64_t ok, failed;
};

static void *sd_writer(void *arg)
{
	struct sdw *w = arg;
	w->tid = gettid_();
	while (!__atomic_load_n(&sd_stop, __ATOMIC_RELAXED)) {
		uint64_t ts;
		uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
		if (p) {
			uint32_t f = (uint32_t)w->ok;
			memcpy(p, &f, 4);
			ring_event_end(p);
			__atomic_store_n(&w->ok, w->ok + 1, __ATOMIC_RELAXED);
		} else {
			__atomic_store_n(&w->failed, w->failed + 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

static void *sd_shutdown(void *arg)
{
	(void)arg;
	ring_shutdown();
	return NULL;
}

static int t_shutdown(const char *dir)
{
	tap_plan(4);
	if (!setup_ok(dir, 0, 0, 0))
		return 1;
	struct sdw w[3] = {{0}};
	pthread_t th[3], s1, s2;
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, sd_writer, &w[i]);
#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
	while (LD(w[0].ok) < 200000 || LD(w[1].ok) < 200000 || LD(w[2].ok) < 200000)
		sched_yield();
	pthread_create(&s1, NULL, sd_shutdown, NULL);
	pthread_create(&s2, NULL, sd_shutdown, NULL);
	pthread_join(s1, NULL);
	pthread_join(s2, NULL);
	/* writers still run: they get NULL now */
	uint64_t f0 = LD(w[0].failed) + LD(w[1].failed) + LD(w[2].failed);
	while (LD(w[0].failed) + LD(w[1].failed) + LD(w[2].failed) < f0 + 3000)
		sched_yield();
	__atomic_store_n(&sd_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ok(1, "two concurrent ring_shutdown calls with writers running returned");
	scan(check_entries);
	int good = all_valid() && g_ns == 3;
	for (int i = 0; i < 3; i++) {
		struct sres *s = find_tid(w[i].tid);
		if (!s || s->bad || s->a_n != w[i].ok || s->a_first != 0) {
			good = 0;
			diag("tid %d: %llu in file, %llu written", w[i].tid,
			     s ? (unsigned long long)s->a_n : 0ull, (unsigned long long)w[i].ok);
		}
	}
	ok(good, "every event a writer completed before the stop is in its stream, in order");
	ok(w[0].failed + w[1].failed + w[2].failed >= 3000, "writers get NULL after shutdown");
	return tap_done();
}

/* ---- disk full (run under ulimit -f) ------------------------------------ */

static void *df_writer(void *arg)
{
	struct wres *w = arg;
	w->tid = gettid_();
	for (uint64_t i = 0; i < w->attempted; i++) {
		uint64_t ts;
		uint32_t f = (uint32_t)w->written;
		uint8_t *p = ring_event_begin(RING_EV_ENTRY, 4, &ts);
		if (p) {
			memcpy(p, &f, 4);
			ring_event_end(p);
			w->written++;
		}
	}
	return NULL;
}

static int t_diskfull(const char *dir)
{
	tap_plan(3);
	if (!setup_ok(dir, 16384, 8, 0))
		return 1;
	struct wres w[2] = {{.attempted = 1000000}, {.attempted = 1000000}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, df_writer, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ring_shutdown();
	scan(check_entries);
	ok(all_valid() && g_ns >= 1,
	   "%d stream(s), each a whole number of valid packets (the file size limit cut them)",
	   g_ns);
	int good = 1;
	uint64_t lost = 0;
	for (int i = 0; i < 2; i++) {
		struct sres *s = find_tid(w[i].tid);
		int lines;
		uint64_t l = info_lost(getpid(), w[i].tid, &lines);
		uint64_t got = s ? s->a_n : 0;
		lost += l;
		if (got + l != w[i].attempted || (s && (s->bad || s->a_first != 0))) {
			good = 0;
			diag("tid %d: %llu in file + %llu lost != %llu", w[i].tid,
			     (unsigned long long)got, (unsigned long long)l,
			     (unsigned long long)w[i].attempted);
		}
	}
	ok(good && lost > 0, "exact: written + lost == attempted per thread (%llu lost)",
	   (unsigned long long)lost);
	printf("# LOST %llu\n", (unsigned long long)lost);
	return tap_done();
}

/* ---- recording again; stream names --------------------------------------- */

static int t_reinit(const char *dir)
{
	tap_plan(5);
	char img[32];
	snprintf(img, sizeof(img), "%d.3", (int)getpid());
	int err = setup(dir, 0, 0, 0);
	ok(err == 0, "ring_init: %s", strerror(-err));
	write_entries(0, 100);
	ring_shutdown();
	/* again, into the same directory: metadata exists, this thread's
	 * buffer is reused, its stream name is taken */
	struct ring_config c = {.ctf_dir = g_ctf, .info_path = g_info};
	err = ring_init(&c);
	write_entries(100, 200);
	ring_shutdown();
	c.img = img; /* an exec'd image */
	int err2 = ring_init(&c);
	write_entries(300, 300);
	ring_shutdown();
	ok(err == 0 && err2 == 0, "ring_init again after ring_shutdown (twice)");
	scan(check_entries);
	char n1[64], n2[64], n3[64];
	int me = (int)getpid(), tid = gettid_();
	snprintf(n1, sizeof(n1), "stream-%d-%d", me, tid);
	snprintf(n2, sizeof(n2), "stream-%d-%d.1", me, tid);
	snprintf(n3, sizeof(n3), "stream-%s-%d", img, tid);
	int found = 0, good = all_valid() && g_ns == 3;
	for (int i = 0; i < g_ns; i++) {
		struct sres *s = &g_s[i];
		uint64_t first = !strcmp(s->name, n1) ? 0 : !strcmp(s->name, n2) ? 100 : 300;
		uint64_t n = first == 0 ? 100 : first == 100 ? 200 : 300;
		found += !strcmp(s->name, n1) || !strcmp(s->name, n2) || !strcmp(s->name, n3);
		if (s->bad || s->a_first != first || s->a_n != n || s->st.first_seq != 0) {
			good = 0;
			diag("%s: %llu events from %llu %s", s->name, (unsigned long long)s->a_n,
			     (unsigned long long)s->a_first, s->bad ? s->why : "");
		}
	}
	ok(found == 3, "streams %s, %s (the name was taken), %s (image key)", n1, n2, n3);
	ok(good, "each session's events in its own stream, one uuid (metadata kept)");
	struct ring_config small;
	ring_config_size(&small, 8);
	struct ring_config big;
	ring_config_size(&big, 1024);
	struct ring_config odd;
	ring_config_size(&odd, 100);
	ok(small.page_size == 4096 && small.pages == 2 && big.page_size == 65536 &&
	       big.pages == 16 && odd.page_size * odd.pages <= 100 * 1024,
	   "ring_config_size: 8 KiB = 2 x 4 KiB, 1 MiB = 16 x 64 KiB, 100 KiB = %zu x %zu",
	   odd.pages, odd.page_size);
	return tap_done();
}

/* ---- readers: trace_pipe and trace cursors (ring_read.c) ----------------- */

#define RD_K 0x9E3779B97F4A7C15ull
static uint64_t rd_n;	  /* events the writer writes */
static int rd_writer_tid; /* set by the writer (atomic) */
static int rd_writer_done;

/* Event SEQ: an entry, a function or a marker of varying length. */
static void rd_write(uint64_t seq)
{
	uint64_t ts, v = seq * RD_K;
	uint32_t s32 = (uint32_t)seq;
	char text[64];
	size_t len = 0;
	unsigned id = seq % 3 == 0   ? RING_EV_ENTRY
		      : seq % 3 == 1 ? RING_EV_FUNCTION
				     : RING_EV_MARKER;
	if (id == RING_EV_MARKER)
		len =
		    (size_t)snprintf(text, sizeof(text), "m%llu%.*s", (unsigned long long)seq,
				     (int)(seq % 40), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") +
		    1;
	size_t size = id == RING_EV_ENTRY ? 4 : id == RING_EV_FUNCTION ? 12 : len;
	uint8_t *p;
	while (!(p = ring_event_begin(id, size, &ts)))
		sched_yield(); /* no-overwrite and full: the consumer makes room */
	if (id == RING_EV_MARKER) {
		memcpy(p, text, len);
	} else {
		memcpy(p, &s32, 4);
		if (id == RING_EV_FUNCTION)
			memcpy(p + 4, &v, 8);
	}
	ring_event_end(p);
}

/* Which event of the pattern E is, or -1 when it is not one. */
static int64_t rd_seq(unsigned id, const uint8_t *p, uint32_t len, uint64_t u64, const char *text)
{
	if (id == RING_EV_ENTRY || id == RING_EV_FUNCTION) {
		uint32_t s32;
		memcpy(&s32, p, 4);
		if ((id == RING_EV_ENTRY) != (s32 % 3 == 0))
			return -1;
		if (id == RING_EV_FUNCTION && (s32 % 3 != 1 || u64 != (uint64_t)s32 * RD_K))
			return -1;
		return s32;
	}
	if (id != RING_EV_MARKER || !text || text[0] != 'm')
		return -1;
	char want[64];
	uint64_t seq = strtoull(text + 1, NULL, 10);
	int n = snprintf(want, sizeof(want), "m%llu%.*s", (unsigned long long)seq, (int)(seq % 40),
			 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	if (seq % 3 != 2 || strcmp(want, text) || (len && len != (uint32_t)n + 1))
		return -1;
	return (int64_t)seq;
}

static void *rd_writer(void *arg)
{
	(void)arg;
	__atomic_store_n(&rd_writer_tid, gettid_(), __ATOMIC_RELEASE);
	for (uint64_t i = 0; i < rd_n; i++)
		rd_write(i);
	ring_thread_exit();
	__atomic_store_n(&rd_writer_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void check_readers_disk(const struct dec_event *ev, void *arg)
{
	struct sres *s = arg;
	uint8_t p[4];
	memcpy(p, &ev->func, 4);
	int64_t seq = rd_seq(ev->id, p, 0, ev->u64, ev->text);
	if (seq < 0 || (uint64_t)seq != s->a_next)
		sbad(s, "event %lld after %llu", (long long)seq, (unsigned long long)s->a_next);
	s->a_next = (uint64_t)seq + 1;
	s->a_n++;
}

/* One reader: every event it returns is whole and the next of the pattern
 * but for the losses it reported just before. */
struct rdchk {
	struct ring_cursor c;
	struct ring_event e;
	uint64_t first, next, read, lost; /* lost: after the first event read */
	int started, ended, bad;
	char why[200];
};

/* Read what C has now: 1 once it is at its end. */
static int rd_take(struct rdchk *k, unsigned max)
{
	for (unsigned i = 0; i < max && !k->ended; i++) {
		int r = ring_cursor_next(&k->c, &k->e);
		if (r == RING_RD_NONE)
			return 0;
		if (r == RING_RD_END) {
			k->ended = 1;
			break;
		}
		uint64_t lost = k->c.lost;
		k->c.lost = 0;
		int64_t seq = rd_seq(k->e.id, k->e.payload, k->e.len,
				     k->e.id == RING_EV_FUNCTION ? dec_u64(k->e.payload + 4) : 0,
				     k->e.id == RING_EV_MARKER ? (const char *)k->e.payload : NULL);
		/* A cursor starts at the oldest event still there. */
		uint64_t want = k->started ? k->next + lost : seq >= 0 ? (uint64_t)seq : 0;
		if (!k->started)
			k->first = want;
		else
			k->lost += lost;
		k->started = 1;
		if (!k->bad && (seq < 0 || (uint64_t)seq != want)) {
			k->bad = 1;
			snprintf(
			    k->why, sizeof(k->why),
			    "event %lld (id %u, len %u) where %llu was due (%llu lost before it)",
			    (long long)seq, k->e.id, k->e.len, (unsigned long long)want,
			    (unsigned long long)lost);
		}
		k->next = (uint64_t)seq + 1;
		k->read++;
	}
	return k->ended;
}

struct rd_find {
	struct ring_buf *b;
	int tid;
};

static void rd_find_cb(struct ring_buf *b, void *data)
{
	struct rd_find *f = data;
	if (!f->b && ring_buf_tid(b) == f->tid) {
		ring_buf_get(b);
		f->b = b;
	}
}

static int t_readers(const char *dir, int disk)
{
	tap_plan(disk ? 8 : 7);
	const char *san = getenv("T_RING_SAN");
	rd_n = san && *san ? 300000 : 2000000;
	int err;
	if (disk) {
		err = setup(dir, 4096, 4, 0);
	} else {
		struct ring_config c = {.page_size = 4096, .pages = 4};
		err = ring_init(&c);
	}
	if (!ok(err == 0, "ring_init (%s): %s", disk ? "session directory" : "memory only",
		strerror(-err)))
		return 1;
	ring_keep_exited(RING_KEEP_GONE);
	pthread_t th;
	pthread_create(&th, NULL, rd_writer, NULL);
	struct rd_find f = {NULL, 0};
	while (!(f.tid = __atomic_load_n(&rd_writer_tid, __ATOMIC_ACQUIRE)))
		sched_yield();
	while (!f.b) { /* its buffer comes with its first event */
		ring_for_each_buf(rd_find_cb, &f);
		sched_yield();
	}
	unsigned long gen = ring_reader_gen();
	static struct rdchk fast, slow, snap;
	ring_cursor_open(&fast.c, f.b, 1);
	ring_cursor_open(&slow.c, f.b, 1);
	uint64_t snap_events = 0, snaps = 0, snap_lost = 0;
	int snap_bad = 0;
	char snap_why[200] = "";
	for (unsigned round = 0;; round++) {
		/* The fast cursor reads all the time, on the other CPU than the
		 * writer; the slow one starts as soon as it can, then reads 50
		 * events only when the writer is done: it is lapped whatever
		 * the speeds (rd_n is many times the buffer), a loaded machine
		 * or a sanitizer slowing either side. */
		int done = __atomic_load_n(&rd_writer_done, __ATOMIC_ACQUIRE);
		int a = rd_take(&fast, 1000);
		int b = !slow.started || done ? rd_take(&slow, 50) : 0;
		if (round % 256 == 0 || done) {
			/* a snapshot, read whole while the writer goes on */
			memset(&snap, 0, sizeof(snap));
			ring_cursor_open(&snap.c, f.b, 0);
			while (!rd_take(&snap, 1000))
				;
			snaps++;
			snap_events += snap.read;
			snap_lost += snap.lost;
			if (snap.bad && !snap_bad) {
				snap_bad = 1;
				snprintf(snap_why, sizeof(snap_why), "%s", snap.why);
			}
		}
		if (a && b)
			break;
		if (done)
			sched_yield(); /* the consumer marks the buffer gone */
	}
	pthread_join(th, NULL);
	diag("fast: %llu read, %llu lost; slow: %llu read, %llu lost; %llu snapshots: %llu read, "
	     "%llu lost",
	     (unsigned long long)fast.read, (unsigned long long)fast.lost,
	     (unsigned long long)slow.read, (unsigned long long)slow.lost,
	     (unsigned long long)snaps, (unsigned long long)snap_events,
	     (unsigned long long)snap_lost);
	ok(!fast.bad && !slow.bad,
	   "trace_pipe cursors: every event whole, in order, each gap "
	   "exactly the losses reported before it%s%s%s",
	   fast.bad || slow.bad ? ": " : "", fast.why, slow.why);
	ok(fast.first + fast.read + fast.lost == rd_n && fast.next == rd_n &&
	       slow.first + slow.read + slow.lost == rd_n && slow.next == rd_n,
	   "each cursor: first + read + lost == %llu written, to the last one (fast from %llu, "
	   "slow from %llu)",
	   (unsigned long long)rd_n, (unsigned long long)fast.first,
	   (unsigned long long)slow.first);
	if (disk)
		ok(1, "slow cursor in no-overwrite mode: %llu lost (the consumer frees pages)",
		   (unsigned long long)slow.lost);
	else
		ok(slow.lost > 0, "the slow cursor was overwritten and said so: %llu lost",
		   (unsigned long long)slow.lost);
	ok(!snap_bad && snap_events > 0, "snapshots: whole, in order, gaps == losses%s%s",
	   snap_bad ? ": " : "", snap_why);
	/* Cleared: nothing left for a reader, no loss either. */
	ring_clear_all();
	struct rdchk after;
	memset(&after, 0, sizeof(after));
	ring_cursor_open(&after.c, f.b, 0);
	rd_take(&after, 10);
	struct rdchk pipe2;
	memset(&pipe2, 0, sizeof(pipe2));
	ring_cursor_open(&pipe2.c, f.b, 1);
	rd_take(&pipe2, 10);
	ok(after.ended && !after.read && !after.c.lost && pipe2.ended && !pipe2.read &&
	       ring_buf_drained(f.b),
	   "after a clear, a snapshot and a new trace_pipe cursor find nothing");
	ring_buf_put(f.b, gen);
	if (disk) {
		ring_shutdown();
		scan(check_readers_disk);
		struct sres *s = find_tid(f.tid);
		ok(all_valid() && s && !s->bad && s->a_n == rd_n && s->a_next == rd_n,
		   "the session holds all %llu events, in order%s%s", (unsigned long long)rd_n,
		   s && s->bad ? ": " : "", s ? s->why : "");
	}
	int n = 0;
	ring_for_each_thread(stats_cb, &n);
	ok(n >= 1, "the exited thread's buffer is kept for readers (%d buffers)", n);
	return tap_done();
}

/* ---- clock --------------------------------------------------------------- */

static int t_clock(const char *dir)
{
	tap_plan(4);
	if (!setup_ok(dir, 0, 0, 0))
		return 1;
	const char *want = getenv("DYNFTRACE_CLOCK");
	for (int i = 0; i < 20000 && want && strcmp(ring_clock_name(), want); i++) {
		struct timespec t = {0, 1000000};
		nanosleep(&t, NULL);
	}
	ok(!want || !strcmp(ring_clock_name(), want), "clock source: %s", ring_clock_name());
	uint64_t prev = 0, back = 0, best = UINT64_MAX, worst = 0, good = 0;
	int64_t best_err = 0;
	for (int i = 0; i < 2000000; i++) {
		uint64_t a = mono(), r = ring_now(), b = mono();
		if (r < prev)
			back++;
		prev = r;
		if (b - a > 2000)
			continue; /* preempted: useless bracket */
		good++;
		int64_t e = r < a ? (int64_t)(r - a) : r > b ? (int64_t)(r - b) : 0;
		uint64_t ae = (uint64_t)(e < 0 ? -e : e);
		if (ae < best) {
			best = ae;
			best_err = e;
		}
		if (ae > worst)
			worst = ae;
	}
	ok(back == 0, "ring_now never goes back (2M reads)");
	ok(good == 0 || worst < 1000000,
	   "within 1 ms of CLOCK_MONOTONIC (worst %llu ns, best %lld ns, last resync error %llu "
	   "ns)",
	   (unsigned long long)worst, (long long)best_err,
	   (unsigned long long)ring_clock_error_ns());
	ring_shutdown();
	return tap_done();
}

/* ---- dump (for babeltrace2 comparison) ----------------------------------- */

static const char *ev_name(unsigned id)
{
	static const char *n[] = {
	    "entry", "exit",	   "function", "call", "entry16", "marker", "function_near",
	    "?",     "exit_depth", "?",	       "?",    "?",	  "?",	    "lost"};
	return id < 14 ? n[id] : "?";
}

static void dump_cb(const struct dec_event *ev, void *arg)
{
	(void)arg;
	printf("%llu %s", (unsigned long long)ev->ts, ev_name(ev->id));
	switch (ev->id) {
	case 0:
		printf(" func=%u", ev->func);
		break;
	case 2:
		printf(" func=%u parent_ip=%llu", ev->func, (unsigned long long)ev->u64);
		break;
	case 3:
		printf(" func=%u duration_ns=%llu", ev->func, (unsigned long long)ev->u64);
		break;
	case 13:
		printf(" count=%u", ev->func);
		break;
	case 6:
		printf(" func=%u parent_off=%lld", ev->func, (long long)ev->u64);
		break;
	case 5:
		printf(" text=%s", ev->text);
		break;
	case 8:
		printf(" depth=%u", ev->func);
		break;
	}
	printf("\n");
}

/* ---- the clock across the wraps of its deltas ------------------------- */

/* The reference conversion, computed another way than the runtime's: the
 * 64-bit tick delta split in halves, so no product overflows (rate under
 * 1 ns per tick: MULT < 2^32). */
static uint64_t cw_ref(uint64_t tsc, uint64_t bt, uint64_t bn, uint64_t mult)
{
	if (tsc < bt)
		return bn;
	uint64_t d = tsc - bt;
	return bn + (d >> 32) * mult + (((d & 0xffffffffu) * mult) >> 32);
}

/* Set the latch (no consumer touches it: DYNFTRACE_CLOCK=vdso) and the
 * TSC mode. Both copies alike, so either sequence parity reads it. */
static void cw_latch(uint64_t bt, uint64_t bn, uint64_t mult)
{
	for (int i = 0; i < 2; i++) {
		__atomic_store_n(&clk_p[i].base_tsc, bt, __ATOMIC_RELAXED);
		__atomic_store_n(&clk_p[i].base_ns, bn, __ATOMIC_RELAXED);
		__atomic_store_n(&clk_p[i].mult, mult, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&clk_mode, CLK_TSC, __ATOMIC_RELEASE);
}

#define CW_N 400
static uint64_t cw_ts[CW_N];
static uint64_t cw_seen;
static int cw_bad;

static void cw_check(const struct dec_event *ev, void *arg)
{
	(void)arg;
	if (ev->id != RING_EV_ENTRY || ev->func >= CW_N || ev->func != cw_seen ||
	    ev->ts != cw_ts[ev->func]) {
		if (!cw_bad++)
			diag("event %llu: id %u func %u ts %llu, written at %llu",
			     (unsigned long long)cw_seen, ev->id, ev->func,
			     (unsigned long long)ev->ts,
			     (unsigned long long)(ev->func < CW_N ? cw_ts[ev->func] : 0));
	}
	cw_seen++;
}

/*
 * An event after a long silence gets its exact time, across the wrap of
 * every delta the writers use: the 32-bit tick delta of the fast
 * conversions (ring_fast.h's clk_tsc_to_ns in C; tramp.S's CLOCK_NS, exact
 * while the signed 64-bit product does not overflow, which is mirrored
 * here), the 2^32 ns of a 32-bit time, and the 13-bit compact header. The
 * latch is set by hand, ticks of 0.4 and 0.999 ns.
 */
static int t_clockwrap(const char *dir)
{
	tap_plan(5);
	static const uint64_t rates[] = {UINT64_C(1717986918) /* 0.4 ns */,
					 UINT64_C(4290672329) /* 0.999 ns */};
	int conv_ok = 1, fast_used = 1, asm_ok = 1, now_ok = 1;
	for (size_t r = 0; r < 2; r++) {
		uint64_t m = rates[r], bt = UINT64_C(1) << 40, bn = (UINT64_C(1) << 32) - 1000;
		uint64_t ovf = (UINT64_C(1) << 63) / m; /* the first product past 2^63 */
		const uint64_t ds[] = {0,
				       1,
				       UINT64_C(1) << 31,
				       (UINT64_C(1) << 32) - 1,
				       UINT64_C(1) << 32,
				       (UINT64_C(1) << 32) + 1,
				       ovf - 1,
				       ovf,
				       ovf + 1,
				       (UINT64_C(1) << 33) + 12345,
				       UINT64_C(1) << 40};
		cw_latch(bt, bn, m);
		for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
			uint64_t ns = 0, want = cw_ref(bt + ds[i], bt, bn, m);
			bool fast = clk_tsc_to_ns(bt + ds[i], &ns);
			if (fast && ns != want) {
				conv_ok = 0;
				diag("clk_tsc_to_ns(base + %llu) = %llu, want %llu",
				     (unsigned long long)ds[i], (unsigned long long)ns,
				     (unsigned long long)want);
			}
			if (!fast && ds[i] < (UINT64_C(1) << 32))
				fast_used = 0;
			if (clk_apply(bt + ds[i], bt, bn, m) != want) {
				conv_ok = 0;
				diag("clk_apply(base + %llu) wrong", (unsigned long long)ds[i]);
			}
			/* tramp.S: signed imul, exact unless it overflows (then
			 * the C path's clk_apply) */
			int64_t prod;
			if (!__builtin_mul_overflow((int64_t)ds[i], (int64_t)m, &prod) &&
			    bn + ((uint64_t)prod >> 32) != want)
				asm_ok = 0;
		}
		/* ring_now (clk_tsc_read) with the counter 2^32 + 5 and 2^40
		 * ticks past the base: the reference brackets it */
		const uint64_t backs[] = {(UINT64_C(1) << 32) + 5, UINT64_C(1) << 40};
		for (size_t i = 0; i < 2; i++) {
			uint64_t t1 = clk_cycles();
			uint64_t base = t1 - backs[i];
			cw_latch(base, bn, m);
			t1 = clk_cycles();
			uint64_t now = ring_now();
			uint64_t t2 = clk_cycles();
			if (now < cw_ref(t1, base, bn, m) || now > cw_ref(t2, base, bn, m)) {
				now_ok = 0;
				diag("ring_now %llu outside [%llu, %llu]", (unsigned long long)now,
				     (unsigned long long)cw_ref(t1, base, bn, m),
				     (unsigned long long)cw_ref(t2, base, bn, m));
			}
		}
	}
	ok(conv_ok, "clk_tsc_to_ns and clk_apply give the reference time on both sides of "
		    "2^32 ticks, 2^63 products and 2^32 ns");
	ok(fast_used, "clk_tsc_to_ns converts every delta under 2^32 ticks itself");
	ok(asm_ok, "tramp.S's conversion (signed product, exact unless it overflows) agrees");
	ok(now_ok, "ring_now after 2^32 and 2^40 ticks without a latch update is exact");

	/* Events after silences: the latch's time jumps ahead by each gap
	 * (as after that long without an event, the counter unchanged), the
	 * event must carry exactly the time the writer returned. */
	int err = setup(dir, 4096, 8, 0);
	if (err) {
		ok(0, "ring_init: %s", strerror(-err));
		return 1;
	}
	static const uint64_t gaps[] = {8191,
					8192,
					8193,
					(UINT64_C(1) << 32) - 1,
					UINT64_C(1) << 32,
					(UINT64_C(1) << 32) + 1,
					(UINT64_C(1) << 33) + 5};
	uint64_t m = rates[0], bn = UINT64_C(5) << 30;
	cw_latch(clk_cycles(), bn, m);
	for (uint32_t i = 0; i < CW_N; i++) {
		if (i % 50 == 25) {
			bn += gaps[(i / 50) % (sizeof(gaps) / sizeof(gaps[0]))];
			cw_latch(clk_cycles(), bn, m);
		}
		uint8_t *p;
		while (!(p = ring_event_begin(RING_EV_ENTRY, 4, &cw_ts[i])))
			sched_yield();
		memcpy(p, &i, 4);
		ring_event_end(p);
	}
	ring_shutdown();
	scan(cw_check);
	ok(all_valid() && g_ns == 1 && cw_seen == CW_N && !cw_bad,
	   "%llu events after silences of 8191 ns to 2^33 ns decoded with the times "
	   "written",
	   (unsigned long long)cw_seen);
	return tap_done();
}

/* ids: how many events of each id as written (entry16 apart from entry). */
static uint64_t g_raw_ids[256];

static void ids_cb(const struct dec_event *ev, void *arg)
{
	(void)arg;
	g_raw_ids[ev->raw_id & 255]++;
}

/* Decode session DIR's streams with CB; 1 (the first stream's error said)
 * if one does not decode. */
static int decode_dir(const char *dir, dec_cb cb)
{
	snprintf(g_dir, sizeof(g_dir), "%s", dir);
	snprintf(g_ctf, sizeof(g_ctf), "%s/ctf", dir);
	snprintf(g_info, sizeof(g_info), "%s/info", dir);
	if (scan(cb) < 0) {
		fprintf(stderr, "%s: no CTF streams with metadata\n", g_ctf);
		return 1;
	}
	for (int i = 0; i < g_ns; i++) {
		if (g_s[i].rc) {
			fprintf(stderr, "%s\n", g_s[i].st.err);
			return 1;
		}
	}
	return 0;
}

static int t_ids(const char *dir)
{
	if (decode_dir(dir, ids_cb))
		return 1;
	for (int i = 0; i < 256; i++)
		if (g_raw_ids[i])
			printf("id %d %llu\n", i, (unsigned long long)g_raw_ids[i]);
	return 0;
}

static int t_dump(const char *dir)
{
	if (decode_dir(dir, dump_cb))
		return 1;
	uint64_t between = 0;
	for (int i = 0; i < g_ns; i++)
		between += g_s[i].st.discarded - g_s[i].st.first_discarded;
	/* losses a CTF reader sees between packets (not those in a stream's
	 * first packet) */
	fprintf(stderr, "discarded between packets: %llu\n", (unsigned long long)between);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: t-ring MODE [DIR] [ARGS]\n");
		return 2;
	}
	const char *m = argv[1], *dir = argc > 2 ? argv[2] : "/tmp/t-ring";
	if (!strcmp(m, "basic"))
		return t_basic(dir);
	if (!strcmp(m, "clockwrap"))
		return t_clockwrap(dir);
	if (!strcmp(m, "nested"))
		return t_nested(dir, argc > 3 ? strtoul(argv[3], NULL, 0) : 0,
				argc > 4 ? strtoul(argv[4], NULL, 0) : 0);
	if (!strcmp(m, "lost"))
		return t_lost(dir, 0, argc > 3);
	if (!strcmp(m, "overwrite"))
		return t_lost(dir, 1, argc > 3);
	if (!strcmp(m, "plug"))
		return t_plug(dir);
	if (!strcmp(m, "threads"))
		return t_threads(dir);
	if (!strcmp(m, "fork"))
		return t_fork(dir);
	if (!strcmp(m, "forkwin"))
		return t_forkwin(dir);
	if (!strcmp(m, "shutdown"))
		return t_shutdown(dir);
	if (!strcmp(m, "diskfull"))
		return t_diskfull(dir);
	if (!strcmp(m, "reinit"))
		return t_reinit(dir);
	if (!strcmp(m, "clock"))
		return t_clock(dir);
	if (!strcmp(m, "dump"))
		return t_dump(dir);
	if (!strcmp(m, "ids"))
		return t_ids(dir);
	if (!strcmp(m, "readers"))
		return t_readers(dir, argc > 3 && !strcmp(argv[3], "disk"));
	fprintf(stderr, "t-ring: unknown mode %s\n", m);
	return 2;
}
