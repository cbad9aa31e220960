/* SPDX-License-Identifier: MIT */
/*
 * ring.c - per-thread lock-free trace buffers whose pages are CTF packets,
 * the trace clock, and the consumer thread that writes them to disk.
 *
 * Format: docs/FORMAT.md. API and contract: ring.h.
 *
 * 1. One buffer per thread
 * ------------------------
 * A thread's first event maps its buffer (mmap: no malloc, no lock, usable
 * in a signal handler) and pushes it on the consumer's list with one CAS.
 *
 *   +-----------------+--------------+------------------------------------+
 *   | struct ring_buf | commit[pages]| page 0 | page 1 | ... | page n-1    |
 *   +-----------------+--------------+------------------------------------+
 *
 * Each page is one CTF packet: 80 bytes of packet header + context, then
 * events; a packet is written without its padding. Positions are virtual: `offset` counts bytes
 * since the buffer was made, page number vp = offset / page_size, slot = vp % pages (pages is a
 * power of two, so the address of a position is data + (offset & buf_mask)).
 *
 * 2. Writers: reserve, write, commit (LTTng's scheme)
 * ---------------------------------------------------
 * Only the owner thread writes its buffer, but a signal handler may trace
 * in the middle of an event of the same thread. So every writer-side update
 * of shared state is one instruction (atomic against a signal on the same
 * CPU) and never LOCKed:
 *
 *   begin:  nest++                  (a stack of in-flight events)
 *           check stop
 *      retry:
 *           off = offset; ts = clock (inside the loop, so a nested event that
 *           slips in between makes the cmpxchg fail and ts is re-read: time
 *           never goes backwards along the stream)
 *           header = compact (2 bytes) if ts - last_ts < 8192 and id <= 6,
 *                    extended (13 bytes) otherwise
 *           if the event does not fit the page: switch (slow path)
 *           cmpxchg(offset, off, off + size)  (no lock prefix) else retry
 *           last_ts = ts; write the header; remember size in nest_size[]
 *   end:    commit[slot] += size | 1 << 32   (xadd, no lock prefix)
 *           nest--
 *
 * last_ts is conservative: it is stored after the cmpxchg, so a nested
 * event between the two sees an older value, which only makes it choose the
 * extended header more often; it is never newer than the true previous
 * event. ts is also clamped to last_ts, so a clock that steps back by a
 * nanosecond cannot fake a compact-timestamp wrap.
 *
 * The commit word of a slot holds committed bytes (low 32 bits, header and
 * padding included) and committed events (high 32 bits). A page is complete
 * when its committed bytes reach page_size: the writer that switched away
 * adds the padding after writing the packet context of the closed page
 * (timestamp_end, content_size, events_discarded). Commits of one lap are
 * removed by subtracting the whole old word when the slot is reused, not by
 * a store, so commits of nested events that slip in meanwhile add up.
 *
 * 3. Page switch
 * --------------
 *   vp ----full----> vp+1: one cmpxchg moves offset from inside page vp to
 *   (vp+1) * page_size + 80 + event size. The winner then retires the slot's
 *   old lap, writes the new packet header, closes page vp (context + padding
 *   commit) and wakes the consumer if it waits. The first event of a packet
 *   always has the extended header, so a reader that extends compact
 *   timestamps from the previous event or from timestamp_begin agrees.
 *
 *   no-overwrite: vp+1 is usable when vp+1 - consumed < pages; else the
 *                 event is dropped and counted (lost), and the page is
 *                 plugged: offset moves to its last byte (ps - 1, a position
 *                 no event ends at) and plug_pos keeps the real end, so no
 *                 later, smaller event fills the hole: the oldest are kept,
 *                 contiguous, as the kernel's padding of the tail page does.
 *   overwrite:    the oldest page is reused; its events are counted
 *                 (overwritten). The consumer writes the buffer only when
 *                 the writer is quiescent (thread dead, or shutdown).
 *   A slot whose old lap is not complete (an interrupted event of this
 *   thread still writes there) is never reused: the event is dropped.
 *
 * 4. Consumer ("dynftrace-rec", all signals blocked)
 * --------------------------------------------------
 * Waits on a futex with a timeout. Writers wake it only when it says it
 * waits (ring_waiting), after a page is complete. Each pass writes the
 * complete pages of every buffer (no-overwrite mode), and flushes and frees
 * the buffers of dead threads (ring_thread_exit marks them; tgkill(tid, 0)
 * says when the thread is gone, so the final flush races with nobody).
 * Files hold whole packets only: a failed or short write is truncated back
 * to the last whole packet, the events are counted lost, and writing stops.
 * A stream file is open only while the consumer writes to it (per pass).
 *
 * Shutdown: stop flag in every buffer, membarrier (asymmetric Dekker with
 * the writer's nest++ before its stop check), then wait until nest == 0 (a
 * futex wake from ring_event_end, bounded) before the final flush of
 * partial pages. A thread stuck inside an event keeps its last page: its
 * events are counted lost.
 *
 * A fatal signal: the dying thread takes the buffers over from the consumer
 * and writes them itself (the emergency flush, the last section).
 *
 * 5. Trace clock
 * --------------
 * CLOCK_MONOTONIC nanoseconds. With an invariant TSC, the cycle counter scaled by
 * mult (32.32 fixed point) from a base: ns = base_ns + (tsc - base_tsc) *
 * mult >> 32. Until the consumer has calibrated (a few ms after ring_init)
 * and without an invariant TSC, the vDSO. The consumer re-synchronises
 * periodically: the rate is measured over the whole run against
 * CLOCK_MONOTONIC and the remaining error is slewed away (at most 500 ppm),
 * keeping the function continuous. Readers go through a two-slot latch
 * (seqcount latch), so they never wait for the updater.
 *
 * 6. Buffers that outlive the process
 * -----------------------------------
 * A death that runs no code of ours (SIGKILL, the OOM killer, a fatal
 * signal the kernel forces while it is blocked, _exit) would lose what the
 * buffers hold. Under `dynftrace record` (DYNFTRACE_SHM names a directory on
 * tmpfs) each buffer is therefore a file there, "IMG-TID[.N]", mapped
 * MAP_SHARED: the whole mapping, struct ring_buf included, so the
 * recorder can read it after the process died and append what the consumer
 * had not written (lib/ring_salvage.c, the same validation as the emergency
 * flush). The fast path does not change. A page of a file gets its memory
 * before the writer enters it (MADV_POPULATE_WRITE in the page switch of
 * the first lap, buf_populate): a full tmpfs then drops the event, counted,
 * as a full buffer does, where a write fault would have been a SIGBUS.
 * Memory is still taken as the thread writes. When no file can be made
 * the buffer is anonymous memory and the info file says so ("noshm: IMG
 * TID"). The runtime unlinks a file once its buffer is flushed (freed, or
 * at shutdown); the recorder removes whatever is left, and recovers the
 * files of dead processes while the program still runs. Each image says
 * when it starts recording ("started: IMG START") and when ring_shutdown
 * has flushed everything ("flushed: IMG", its last act): the recorder
 * tells from these which dead process did not flush, and so lost what an
 * anonymous buffer held.
 *
 * fork: the child inherits the shared mapping. It must never write into
 * it: across fork the forking thread has no buffer (ring_atfork_prepare:
 * its events are counted lost meanwhile) and list_lock is held, so no
 * stream file is open and the list is stable; the child then unmaps its
 * parent's buffers (never unlinking them) and makes its own. A child made
 * by a raw fork or clone system call runs no fork handler: it would write
 * into its parent's buffer (as with vfork, today).
 *
 * Concurrency (globals):
 *
 * | field                       | written by                 | read by                 |
 * |-----------------------------|----------------------------|-------------------------|
 * | ring_state                  | init/shutdown, ctl_lock;   | writers (slow path)     |
 * |                             | the emergency flush        |                         |
 * | cfg, dirs, uuid, stall      | init, ctl_lock, state OFF  | all, after state ON     |
 * | ring_head                   | writers (CAS push);        | consumer, stats,        |
 * |                             | consumer (unlink, list_lock)| atfork child           |
 * | ring_waiting                | consumer (store), writers (xchg) | writers          |
 * | ring_wake_seq               | writers, shutdown (atomic add) | consumer (futex)     |
 * | consumer_stop, consumer_up  | shutdown/start, ctl_lock   | consumer                |
 * | consumer_needed             | atfork child; lazy starter (ctl_lock) | writers (slow) |
 * | disk_error, disk_lost,      | consumer                   | consumer                |
 * |   lost_freed                |                            |                         |
 * | image_key                   | init (ctl_lock, consumer   | consumer (list_lock)    |
 * |                             | stopped), ring_set_img     |                         |
 * |                             | (list_lock), atfork child  |                         |
 * | lost_nobuf                  | writers (atomic add)       | consumer at shutdown    |
 * | shm_dir, cfg_test_noshm     | init (ctl_lock, state OFF) | buf_create              |
 * | clk (params, seq, mode)     | consumer (latch)           | every clock read        |
 * | ring_tls, ring_tls_*        | owner thread (TLS)         | owner thread            |
 *
 * Per buffer: see struct ring_buf.
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

#include "ring.h"
#include "ring_fast.h"

enum { RING_OFF = 0, RING_ON = 1, RING_STOPPING = 2 };

/* Consumer timing. */
#define FLUSH_INTERVAL_NS 100000000ull	/* idle wake-up: liveness, clock */
#define EXITING_POLL_NS	  2000000ull	/* while a marked thread still runs */
#define LIVENESS_NS	  1000000000ull /* check every thread this often */
#define QUIESCE_WAIT_NS	  2000000000ull /* shutdown: wait for in-flight events */

/* ---- configuration and global state ---------------------------------- */

static int ring_state;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring_buf *ring_head;
static char ctf_dir[PATH_MAX];
static char info_path[PATH_MAX];
static char image_key[32]; /* IMG of the stream files; "": the pid */
static int have_info;
static size_t cfg_page_size = RING_DEFAULT_PAGE_SIZE;
static size_t cfg_pages = RING_DEFAULT_PAGES;
static int cfg_overwrite;
static int cfg_stall;
static uint8_t trace_uuid[16];

HIDDEN uint32_t ring_waiting;
HIDDEN uint32_t ring_wake_seq;
static pthread_t consumer_thread;
static int consumer_up;
static int consumer_stop;
static int consumer_needed;
static int disk_error;
static uint64_t disk_lost;
static uint64_t lost_nobuf;
static uint64_t lost_freed; /* consumer: losses of buffers already freed */
static char shm_dir[128];   /* DYNFTRACE_SHM: where buffer files go; "": anonymous */
static int cfg_test_noshm;  /* DYNFTRACE_RING_TEST_NOSHM: as if no file could be made */

HIDDEN __thread struct ring_buf *ring_tls __attribute__((tls_model("initial-exec")));

/* Owner thread only: buffer creation state and events lost before it. */
static __thread uint32_t ring_tls_state __attribute__((tls_model("initial-exec")));
static __thread uint64_t ring_tls_early_lost __attribute__((tls_model("initial-exec")));
enum { TLS_NONE = 0, TLS_CREATING = 1, TLS_READY = 2, TLS_FAILED = 3 };
/* Owner thread: its buffer and state kept aside across fork (section 6). */
static __thread struct ring_buf *ring_tls_forking __attribute__((tls_model("initial-exec")));
static __thread uint32_t ring_tls_state_forking __attribute__((tls_model("initial-exec")));

/* Async-signal-safe formatting and info lines (the emergency flush's). */
static bool emerg_cat(char **p, char *end, const char *s);
static bool emerg_cat_u64(char **p, char *end, uint64_t v);
static void emerg_info_line(const char *line, size_t len);
static void info_img_line(const char *key, bool has_n, uint64_t n);
static void info_started(void);

static long sys_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static pid_t sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- trace clock ------------------------------------------------------ */

HIDDEN uint32_t clk_mode = CLK_VDSO;
HIDDEN uint32_t clk_seq;
HIDDEN struct clk_params clk_p[2];
static int clk_want;	    /* -1 vdso forced, 0 auto, 1 tsc forced */
static int clk_calibrating; /* consumer's state: 0 idle, 1 sampling, 2 running */
static uint64_t clk_tsc0, clk_ns0, clk_next, clk_steps;
static uint64_t clk_last_err; /* |error| ns at the last resync, for stats */

static inline uint64_t vdso_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t clock_read(void)
{
	if (likely(__atomic_load_n(&clk_mode, __ATOMIC_ACQUIRE) == CLK_TSC)) {
		uint64_t ns;
		while (unlikely(!clk_tsc_read(&ns)))
			;
		return ns;
	}
	return vdso_now();
}

uint64_t ring_now(void)
{
	return clock_read();
}

/* Latch update: readers always have one stable copy. Consumer only. */
static void clk_publish(const struct clk_params *np)
{
	for (int i = 0; i < 2; i++) {
		__atomic_fetch_add(&clk_seq, 1, __ATOMIC_SEQ_CST); /* readers use the other copy */
		struct clk_params *p = &clk_p[~clk_seq & 1];
		__atomic_store_n(&p->base_tsc, np->base_tsc, __ATOMIC_RELAXED);
		__atomic_store_n(&p->base_ns, np->base_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&p->mult, np->mult, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&clk_seq, 1, __ATOMIC_SEQ_CST);
}

/* One (tsc, CLOCK_MONOTONIC) pair: the tightest of a few bracketed reads. */
static void clk_sample(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t1 = clk_cycles();
		uint64_t n = vdso_now();
		uint64_t t2 = clk_cycles();
		if (t2 - t1 < best) {
			best = t2 - t1;
			*tsc = t1 + (t2 - t1) / 2;
			*ns = n;
		}
	}
}

/* Consumer: called on every wake-up; returns ns until it wants to run. */
static uint64_t clk_tick(void)
{
	if (clk_want < 0 || clk_calibrating == 0)
		return UINT64_MAX;
	uint64_t tsc = 0, ns = vdso_now();
	if (clk_tsc0 && ns < clk_next)
		return clk_next - ns;
	clk_sample(&tsc, &ns);
	if (clk_calibrating == 1 && clk_tsc0 == 0) {
		clk_tsc0 = tsc;
		clk_ns0 = ns;
		clk_next = ns + 5000000; /* first rate over 5 ms */
		return 5000000;
	}
	if (tsc <= clk_tsc0 || ns <= clk_ns0) {
		/* TSC going backwards: give up on it. */
		__atomic_store_n(&clk_mode, CLK_VDSO, __ATOMIC_RELEASE);
		clk_calibrating = 0;
		dft_debug("trace clock: TSC not monotonic, using clock_gettime");
		return UINT64_MAX;
	}
	/* Rate over the whole run: ns per tick, 32.32. */
	unsigned __int128 num = (unsigned __int128)(ns - clk_ns0) << 32;
	uint64_t rate = (uint64_t)(num / (tsc - clk_tsc0));
	struct clk_params np = {.base_tsc = tsc, .mult = rate};
	if (clk_calibrating == 1) {
		np.base_ns = ns;
		clk_publish(&np);
		__atomic_store_n(&clk_mode, CLK_TSC, __ATOMIC_RELEASE);
		clk_calibrating = 2;
		dft_debug("trace clock: TSC, %.6f ns per tick", (double)rate / 4294967296.0);
	} else {
		const struct clk_params *cur = &clk_p[clk_seq & 1];
		uint64_t now = clk_apply(tsc, cur->base_tsc, cur->base_ns, cur->mult);
		int64_t err = (int64_t)(ns - now);
		__atomic_store_n(&clk_last_err, (uint64_t)(err < 0 ? -err : err), __ATOMIC_RELAXED);
		np.base_ns = now; /* continuous */
		if (err > 1000000 || err < -1000000) {
			np.base_ns = ns; /* far off (host suspend?): step */
		} else {
			/* Slew the error away over the next 2 s, at most 500 ppm. */
			__int128 adj = (__int128)rate * err / 2000000000;
			__int128 lim = (__int128)rate / 2000;
			if (adj > lim)
				adj = lim;
			if (adj < -lim)
				adj = -lim;
			np.mult = (uint64_t)((__int128)rate + adj);
		}
		clk_publish(&np);
	}
	clk_steps++;
	uint64_t since = ns - clk_ns0;
	uint64_t step = since < 100000000 ? 20000000 : since < 1000000000 ? 200000000 : 1000000000;
	clk_next = ns + step;
	return step;
}

/* ---- metadata ---------------------------------------------------------- */

static void uuid_str(const uint8_t *u, char *s)
{
	sprintf(s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		u[14], u[15]);
}

static int uuid_parse(const char *s, uint8_t *u)
{
	int n = 0;
	for (int i = 0; n < 16 && s[i]; i++) {
		if (s[i] == '-')
			continue;
		unsigned v;
		if (sscanf(s + i, "%2x", &v) != 1)
			return -EINVAL;
		u[n++] = (uint8_t)v;
		i++;
	}
	return n == 16 ? 0 : -EINVAL;
}

static const char metadata_fmt[] =
    "/* CTF 1.8 */\n"
    "\n"
    "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
    "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
    "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
    "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
    "\n"
    "trace {\n"
    "\tmajor = 1;\n"
    "\tminor = 8;\n"
    "\tuuid = \"%s\";\n"
    "\tbyte_order = le;\n"
    "\tpacket.header := struct {\n"
    "\t\tuint32_t magic;\n"
    "\t\tuint8_t uuid[16];\n"
    "\t\tuint32_t stream_id;\n"
    "\t};\n"
    "};\n"
    "\n"
    "env {\n"
    "\tdomain = \"ust\";\n"
    "\ttracer_name = \"dynftrace\";\n"
    "\ttracer_major = 0;\n"
    "\ttracer_minor = 1;\n"
    "\ttrace_format = \"dynftrace-ctf\";\n"
    "\ttrace_format_version = 1;\n"
    "};\n"
    "\n"
    "clock {\n"
    "\tname = \"monotonic\";\n"
    "\tdescription = \"CLOCK_MONOTONIC\";\n"
    "\tfreq = 1000000000;\n"
    "\tprecision = 1;\n"
    "\toffset_s = 0;\n"
    "\toffset = 0;\n"
    "\tabsolute = false;\n"
    "};\n"
    "\n"
    "typealias integer { size = " FMT_STR(
	FMT_TS_BITS) "; align = 1; signed = false;\n"
		     "\tmap = clock.monotonic.value; } := uint13_clock_monotonic_t;\n"
		     "typealias integer { size = 64; align = 8; signed = false;\n"
		     "\tmap = clock.monotonic.value; } := uint64_clock_monotonic_t;\n"
		     "\n"
		     "struct packet_context {\n"
		     "\tuint64_clock_monotonic_t timestamp_begin;\n"
		     "\tuint64_clock_monotonic_t timestamp_end;\n"
		     "\tuint64_t content_size;\n"
		     "\tuint64_t packet_size;\n"
		     "\tuint64_t events_discarded;\n"
		     "\tuint64_t packet_seq_num;\n"
		     "\tuint32_t pid;\n"
		     "\tuint32_t tid;\n"
		     "};\n"
		     "\n"
		     "struct event_header_compact {\n"
		     "\tenum : integer { size = 3; align = 8; signed = false; } { compact = 0 "
		     "... " FMT_STR(FMT_COMPACT_ID_MAX) ", extended = " FMT_STR(
			 FMT_EXT_TAG) " } id;\n"
				      "\tvariant <id> {\n"
				      "\t\tstruct {\n"
				      "\t\t\tuint13_clock_monotonic_t timestamp;\n"
				      "\t\t} compact;\n"
				      "\t\tstruct {\n"
				      "\t\t\tuint32_t id;\n"
				      "\t\t\tuint64_clock_monotonic_t timestamp;\n"
				      "\t\t} extended;\n"
				      "\t} v;\n"
				      "} align(8);\n"
				      "\n"
				      "stream {\n"
				      "\tid = 0;\n"
				      "\tevent.header := struct event_header_compact;\n"
				      "\tpacket.context := struct packet_context;\n"
				      "};\n"
				      "\n" FMT_TSDL_EVENTS;

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int metadata_read_uuid(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = 0;
	char *u = strstr(buf, "uuid = \"");
	if (!u)
		return -EINVAL;
	return uuid_parse(u + 8, trace_uuid);
}

/* The first process of a session writes metadata (whole, then linked into
 * place so nobody reads half of it); the others read its uuid back. */
static int metadata_init(void)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 48];
	if (snprintf(path, sizeof(path), "%s/metadata", ctf_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, F_OK) == 0)
		return metadata_read_uuid(path);
	if (getrandom(trace_uuid, sizeof(trace_uuid), 0) != (ssize_t)sizeof(trace_uuid)) {
		uint64_t a = vdso_now() ^ ((uint64_t)getpid() << 32), b = clk_cycles();
		memcpy(trace_uuid, &a, 8);
		memcpy(trace_uuid + 8, &b, 8);
	}
	trace_uuid[6] = (uint8_t)((trace_uuid[6] & 0x0f) | 0x40);
	trace_uuid[8] = (uint8_t)((trace_uuid[8] & 0x3f) | 0x80);
	char us[40];
	uuid_str(trace_uuid, us);
	static char text[sizeof(metadata_fmt) + 64];
	int len = snprintf(text, sizeof(text), metadata_fmt, us);
	snprintf(tmp, sizeof(tmp), "%s/.metadata.%d", ctf_dir, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int err = write_all(fd, text, (size_t)len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && link(tmp, path)) {
		err = -errno;
		if (err == -EEXIST) /* another process of the session was first */
			err = metadata_read_uuid(path);
		else if (err == -EPERM || err == -EOPNOTSUPP || err == -ENOSYS) {
			/* no hard links here: exclusive create instead */
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0) {
				err = errno == EEXIST ? metadata_read_uuid(path) : -errno;
			} else {
				err = write_all(fd, text, (size_t)len);
				close(fd);
			}
		}
	}
	unlink(tmp);
	return err;
}

/* ---- consumer wake-up ------------------------------------------------- */

/* Writers (any context): wake the consumer only if it says it waits. */

static void ring_wake_force(void)
{
	__atomic_fetch_add(&ring_wake_seq, 1, __ATOMIC_SEQ_CST);
	sys_futex(&ring_wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void consumer_wait(uint32_t seq, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
			      .tv_nsec = (long)(ns % 1000000000ull)};
	sys_futex(&ring_wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts);
}

/* ---- buffers ----------------------------------------------------------- */

/* Opens a packet. Leaves the closing fields (timestamp_end, content_size,
 * packet_size, events_discarded: bytes 32-63) to whoever closes it, so the
 * order of an open and a nested close cannot matter. */
static void page_open(struct ring_buf *b, uint8_t *page, uint64_t ts, uint64_t seq)
{
	memcpy(page, b->hdr_tmpl, PKT_TS_END);
	memcpy(page + PKT_SEQ, b->hdr_tmpl + PKT_SEQ, RING_HDR_SIZE - PKT_SEQ);
	put_u64(page + PKT_TS_BEGIN, ts);
	put_u64(page + PKT_SEQ, seq);
}

static void buf_reset(struct ring_buf *b)
{
	memset(b->commit, 0, b->pages * sizeof(uint64_t));
	__atomic_store_n(&b->consumed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->lost, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->overwritten, 0, __ATOMIC_RELAXED);
	b->lost_consumer = b->events_written = b->file_bytes = b->last_disc = 0;
	b->lost_reported = 0;
	b->fd = -1;
	b->path[0] = 0; /* a new recording: a new file */
	b->last_ts = 0; /* the first event gets an extended header */
	page_open(b, b->data, clock_read(), 0);
	b->commit[0] = RING_HDR_SIZE;
	__atomic_store_n(&b->offset, RING_HDR_SIZE, __ATOMIC_RELAXED);
}

static void count_lost_nobuf(uint64_t n)
{
	if (ring_tls_state == TLS_CREATING || ring_tls_state == TLS_NONE)
		local_add(&ring_tls_early_lost, n);
	else
		__atomic_fetch_add(&lost_nobuf, n, __ATOMIC_RELAXED);
}

static int consumer_start(void);

/* After fork: start the child's consumer from a writer's slow path. */
static void consumer_lazy_start(void)
{
	if (!__atomic_load_n(&consumer_needed, __ATOMIC_RELAXED))
		return;
	if (pthread_mutex_trylock(&ctl_lock))
		return; /* someone else is at it; a later slow path retries */
	if (consumer_needed && !consumer_up && ring_state == RING_ON)
		consumer_start();
	__atomic_store_n(&consumer_needed, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ctl_lock);
}

/*
 * The memory of a new buffer of LEN bytes for thread TID: a file of shm_dir
 * mapped shared (section 6), its path in SHM_PATH, else anonymous memory
 * (SHM_PATH ""). The shared file has memory for its first HEAD bytes;
 * *POPULATED is the first page (after HEAD) without memory, UINT64_MAX when
 * all have it. Owner thread, maybe in a signal handler: system calls only.
 * MAP_FAILED: no memory.
 */
static void *buf_map(size_t len, size_t head, pid_t tid, char *shm_path, uint64_t *populated)
{
	*populated = UINT64_MAX;
	shm_path[0] = 0;
	for (uint64_t i = 0; shm_dir[0] && !cfg_test_noshm && i < 1000; i++) {
		char *p = shm_path, *end = shm_path + RING_SHM_PATH - 1;
		bool ok = emerg_cat(&p, end, shm_dir) && emerg_cat(&p, end, "/") &&
			  (image_key[0] ? emerg_cat(&p, end, image_key)
					: emerg_cat_u64(&p, end, (uint64_t)getpid())) &&
			  emerg_cat(&p, end, "-") && emerg_cat_u64(&p, end, (uint64_t)tid) &&
			  (!i || (emerg_cat(&p, end, ".") && emerg_cat_u64(&p, end, i)));
		if (!ok)
			break;
		*p = 0;
		int fd = open(shm_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST)
			continue; /* a thread id used again */
		if (fd < 0)
			break;
		/* Not beyond a file size limit: that would be SIGXFSZ. */
		void *m = MAP_FAILED;
		struct rlimit rl;
		if (!getrlimit(RLIMIT_FSIZE, &rl) &&
		    (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= len) &&
		    ftruncate(fd, (off_t)len) == 0)
			m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		/* Memory before use: a full tmpfs must not be a SIGBUS at a write
		 * to the buffer. Page by page on the first lap (ring_switch:
		 * buf_populate), so memory is still taken as the thread writes;
		 * all of it now on kernels without MADV_POPULATE_WRITE (< 5.14). */
		if (m != MAP_FAILED && madvise(m, head, MADV_POPULATE_WRITE)) {
			if (errno != EINVAL || fallocate(fd, 0, 0, (off_t)len)) {
				munmap(m, len);
				m = MAP_FAILED;
			}
		} else if (m != MAP_FAILED) {
			*populated = 1;
		}
		close(fd);
		if (m != MAP_FAILED)
			return m;
		unlink(shm_path);
		break;
	}
	/* Anonymous memory: a death without flush loses it (info says so,
	 * with or without a directory for files). */
	info_img_line("noshm:", true, (uint64_t)tid);
	shm_path[0] = 0;
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* Owner thread, first event (possibly in a signal handler). */
static struct ring_buf *buf_create(void)
{
	if (ring_tls_state == TLS_CREATING || ring_tls_state == TLS_FAILED) {
		count_lost_nobuf(1);
		return NULL;
	}
	ring_tls_state = TLS_CREATING;
	barrier();
	if (ring_tls) { /* a signal handler made it meanwhile */
		ring_tls_state = TLS_READY;
		return ring_tls;
	}
	consumer_lazy_start();
	size_t ps = cfg_page_size, np = cfg_pages;
	size_t ctl = (sizeof(struct ring_buf) + np * sizeof(uint64_t) + 4095) & ~(size_t)4095;
	size_t len = ctl + np * ps;
	pid_t tid = sys_gettid();
	char shm_path[RING_SHM_PATH];
	uint64_t populated;
	void *m = buf_map(len, ctl + ps, tid, shm_path, &populated);
	if (m == MAP_FAILED) {
		ring_tls_state = TLS_FAILED;
		__atomic_fetch_add(&lost_nobuf, 1 + ring_tls_early_lost, __ATOMIC_RELAXED);
		ring_tls_early_lost = 0;
		return NULL;
	}
	struct ring_buf *b = m;
	b->map_size = len;
	b->commit = (uint64_t *)(b + 1);
	b->data = (uint8_t *)m + ctl;
	b->pages = (uint32_t)np;
	b->page_size = (uint32_t)ps;
	b->page_shift = (uint32_t)__builtin_ctzl(ps);
	b->buf_mask = np * ps - 1;
	b->pid = getpid();
	b->tid = tid;
	b->populated = populated;
	b->ctl_size = (uint32_t)ctl;
	b->overwrite = (uint32_t)cfg_overwrite;
	memcpy(b->img, image_key, sizeof(b->img));
	memcpy(b->shm_path, shm_path, sizeof(b->shm_path));
	uint8_t *t = b->hdr_tmpl;
	put_u32(t + PKT_MAGIC, RING_MAGIC);
	memcpy(t + PKT_UUID, trace_uuid, 16);
	put_u32(t + PKT_STREAM_ID, 0);
	put_u32(t + PKT_PID, (uint32_t)b->pid);
	put_u32(t + PKT_TID, (uint32_t)b->tid);
	buf_reset(b);
	if (shm_path[0]) /* the recorder may read it from now on */
		__atomic_store_n(&b->shm_magic, RING_SHM_MAGIC, __ATOMIC_RELEASE);
	/* Publish to the consumer. */
	struct ring_buf *h = __atomic_load_n(&ring_head, __ATOMIC_RELAXED);
	do
		b->next = h;
	while (!__atomic_compare_exchange_n(&ring_head, &h, b, true, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED));
	/* Dekker with ring_shutdown: it either sees us in the list or we see it. */
	if (__atomic_load_n(&ring_state, __ATOMIC_SEQ_CST) != RING_ON)
		__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	ring_tls = b; /* now our signal handlers use it */
	barrier();
	uint64_t early = ring_tls_early_lost;
	ring_tls_early_lost = 0;
	if (early)
		local_add(&b->lost, early);
	ring_tls_state = TLS_READY;
	return b;
}

/* ---- writer ------------------------------------------------------------ */

/* A shared buffer's page VP of the first lap gets its memory (buf_map);
 * false when tmpfs has none (the event is dropped, as when full). */
static __attribute__((noinline)) bool buf_populate(struct ring_buf *b, uint64_t vp)
{
	if (madvise(b->data + (vp << b->page_shift), b->page_size, MADV_POPULATE_WRITE))
		return false;
	if (vp + 1 >= b->pages)
		b->populated = UINT64_MAX;
	else if (b->populated < vp + 1)
		b->populated = vp + 1;
	return true;
}

/* The event does not fit the current page: move to the next one. */
static __attribute__((noinline)) uint8_t *ring_switch(struct ring_buf *b, uint32_t n, unsigned id,
						      size_t payload, uint64_t *tsp)
{
	const uint32_t ps = b->page_size;
	const uint64_t pmask = ps - 1;
	for (;;) {
		uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_RELAXED);
		barrier(); /* offset, then clock: see ring_event_begin() */
		uint64_t ts = clock_read();
		uint64_t last = b->last_ts;
		if (unlikely(ts < last))
			ts = last;
		uint64_t pos = off & pmask;
		const bool plugged = pos == ps - 1;
		if (plugged)
			pos = __atomic_load_n(&b->plug_pos, __ATOMIC_RELAXED);
		uint32_t hdr = (ts - last < RING_TS_WRAP && id <= FMT_COMPACT_ID_MAX)
				   ? RING_COMPACT_HDR
				   : RING_EXT_HDR;
		uint32_t size = hdr + (uint32_t)payload;
		if (!plugged && pos + size < ps - 1) {
			/* A nested event switched meanwhile: room here. */
			if (!local_cmpxchg(&b->offset, off, off + size))
				continue;
			b->last_ts = ts;
			uint8_t *p = b->data + (off & b->buf_mask);
			write_header(p, id, ts, hdr);
			b->nest_size[n] = size;
			*tsp = ts;
			return p + hdr;
		}
		size = RING_EXT_HDR + (uint32_t)payload;
		uint64_t vp = off >> b->page_shift, nvp = vp + 1;
		size_t nslot = nvp & (b->pages - 1);
		/* Before dropping, make sure OFF is still current: a nested event
		 * may have switched pages since we read it. */
		if ((!cfg_overwrite &&
		     nvp - __atomic_load_n(&b->consumed, __ATOMIC_ACQUIRE) >= b->pages) ||
		    (unlikely(nvp >= b->populated) && !buf_populate(b, nvp))) {
			if (__atomic_load_n(&b->offset, __ATOMIC_RELAXED) != off)
				continue;
			/* Plug the page, as the kernel pads it: a smaller event
			 * that would still fit is dropped too, so what is kept
			 * is the oldest, without holes. plug_pos is stored
			 * before the plug, so a nested writer that sees the plug
			 * also sees it. */
			if (!plugged) {
				__atomic_store_n(&b->plug_pos, pos, __ATOMIC_RELAXED);
				barrier();
				if (!local_cmpxchg(&b->offset, off, off - pos + ps - 1))
					continue;
			}
			consumer_lazy_start();
			return NULL; /* full: keep the oldest */
		}
		uint64_t old = 0;
		if (nvp >= b->pages) {
			old = __atomic_load_n(&b->commit[nslot], __ATOMIC_ACQUIRE);
			if ((uint32_t)old != ps) {
				if (__atomic_load_n(&b->offset, __ATOMIC_RELAXED) != off)
					continue;
				return NULL; /* an interrupted event still writes there */
			}
		}
		uint64_t noff = (nvp << b->page_shift) + RING_HDR_SIZE + size;
		if (!local_cmpxchg(&b->offset, off, noff))
			continue;
		b->last_ts = ts;
		/* Retire the slot's previous lap (commits of nested events that
		 * already went to the new page add up with this). */
		if (old) {
			local_add(&b->commit[nslot], -old);
			if (cfg_overwrite)
				local_add(&b->overwritten, old >> 32);
		}
		uint8_t *np = b->data + ((nvp << b->page_shift) & b->buf_mask);
		page_open(b, np, ts, nvp);
		local_add(&b->commit[nslot], RING_HDR_SIZE);
		/* Close the old page, then commit its padding: complete. */
		uint8_t *op = b->data + ((vp << b->page_shift) & b->buf_mask);
		put_u64(op + PKT_TS_END, ts);
		put_u64(op + PKT_CONTENT_SIZE, pos * 8);
		put_u64(op + PKT_PACKET_SIZE, pos * 8);
		put_u64(op + PKT_DISCARDED, __atomic_load_n(&b->lost, __ATOMIC_RELAXED));
		local_add(&b->commit[vp & (b->pages - 1)], ps - pos);
		if (!cfg_overwrite)
			ring_wake();
		uint8_t *p = np + RING_HDR_SIZE;
		write_header(p, id, ts, RING_EXT_HDR);
		b->nest_size[n] = size;
		*tsp = ts;
		return p + RING_EXT_HDR;
	}
}

static __attribute__((noinline)) uint8_t *ring_begin_slow(unsigned id, size_t payload,
							  uint64_t *tsp)
{
	struct ring_buf *b = ring_tls;
	if (b && payload > RING_PAYLOAD_MAX) {
		local_add(&b->lost, 1);
		return NULL;
	}
	if (b) /* a signal handler made the buffer since the fast path looked */
		return ring_event_begin(id, payload, tsp);
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) != RING_ON)
		return NULL;
	if (payload > RING_PAYLOAD_MAX) {
		count_lost_nobuf(1);
		return NULL;
	}
	if (!buf_create())
		return NULL;
	return ring_event_begin(id, payload, tsp);
}

/* Everything the fast path does not: the vDSO clock, a retry after a
 * nested event, a page switch, a stop, a drop. nest is already N + 1. */
static __attribute__((noinline)) uint8_t *
ring_reserve_slow(struct ring_buf *b, uint32_t n, unsigned id, size_t payload, uint64_t *tsp)
{
	uint8_t *p = NULL;
	if (likely(!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)))
		p = ring_switch(b, n, id, payload, tsp);
	if (likely(p))
		return p;
	local_add(&b->lost, 1);
	barrier();
	__atomic_store_n(&b->nest, n, __ATOMIC_RELAXED);
	if (unlikely(__atomic_load_n(&b->stop, __ATOMIC_RELAXED)))
		ring_wake(); /* ring_quiesce() may wait for nest == 0 */
	return NULL;
}

/*
 * The fast path: TSC clock, the event fits the page, no nested event in
 * between. No call and no loop (but the clock latch's), so the compiler
 * keeps it in registers; anything else goes to ring_reserve_slow().
 */
uint8_t *ring_event_begin(unsigned id, size_t payload, uint64_t *tsp)
{
	struct ring_buf *b = ring_tls;
	if (unlikely(!b) || unlikely(payload > RING_PAYLOAD_MAX))
		return ring_begin_slow(id, payload, tsp);
	uint32_t n = __atomic_load_n(&b->nest, __ATOMIC_RELAXED);
	if (unlikely(n >= RING_NEST_MAX)) {
		local_add(&b->lost, 1);
		return NULL;
	}
	__atomic_store_n(&b->nest, n + 1, __ATOMIC_RELAXED);
	barrier(); /* nest before stop: see ring_quiesce() */
	/* The offset is read before the clock: a nested event in between
	 * moves it, our cmpxchg fails and the clock is read again, so an event
	 * never lands after one with a later time. */
	uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_RELAXED);
	barrier();
	uint64_t ts;
	uint8_t *p;
	if (unlikely(__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) ||
	    unlikely(__atomic_load_n(&clk_mode, __ATOMIC_RELAXED) != CLK_TSC) ||
	    unlikely(!clk_tsc_read(&ts)) ||
	    unlikely(!(p = ring_try_reserve(b, n, off, id, (uint32_t)payload, ts, tsp))))
		return ring_reserve_slow(b, n, id, payload, tsp);
	return p;
}

void ring_event_end(uint8_t *payload)
{
	ring_commit(ring_tls, payload);
}

void ring_count_lost(uint64_t lost)
{
	struct ring_buf *b = ring_tls;
	if (b)
		local_add(&b->lost, lost);
	else if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_ON)
		count_lost_nobuf(lost);
}

/* Hand-over points of the emergency flush (its section, at the end). */
static bool emerg_enter(void);
static bool emerg_yield(void);
static bool emerg_leave(void);
static void emerg_reset(bool all);
static void emerg_wait_done(void);

/* ---- consumer ---------------------------------------------------------- */

static uint64_t buf_total_lost(const struct ring_buf *b)
{
	return __atomic_load_n(&b->lost, __ATOMIC_RELAXED) +
	       __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED) + b->lost_consumer;
}

/*
 * The consumer opens a stream file, writes the packets that are ready and
 * closes it again in each pass (stream_close), so the runtime holds no
 * descriptor between passes: none that a thousand threads would use up
 * from RLIMIT_NOFILE, none that the program could close or see in its
 * descriptor numbers.
 */
static int stream_open(struct ring_buf *b)
{
	if (b->path[0]) {
		int fd = open(b->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
		if (lseek(fd, (off_t)b->file_bytes, SEEK_SET) < 0) {
			int err = -errno;
			close(fd);
			return err;
		}
		b->fd = fd;
		return 0;
	}
	char *path = b->path;
	for (int i = 0; i < 1000; i++) {
		int n;
		char img[32];
		if (image_key[0])
			snprintf(img, sizeof(img), "%s", image_key);
		else
			snprintf(img, sizeof(img), "%d", (int)b->pid);
		if (i == 0)
			n = snprintf(path, sizeof(b->path), "%s/stream-%s-%d", ctf_dir, img,
				     (int)b->tid);
		else
			n = snprintf(path, sizeof(b->path), "%s/stream-%s-%d.%d", ctf_dir, img,
				     (int)b->tid, i);
		if (n >= (int)sizeof(b->path)) {
			path[0] = 0;
			return -ENAMETOOLONG;
		}
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			b->fd = fd;
			return 0;
		}
		int err = -errno;
		if (err != -EEXIST) {
			path[0] = 0;
			return err;
		}
		/* a thread id (or pid) used again in this session */
	}
	path[0] = 0;
	return -EEXIST;
}

static void stream_close(struct ring_buf *b)
{
	if (b->fd >= 0) {
		close(b->fd);
		b->fd = -1;
	}
}

static void disk_failed(int err)
{
	if (!disk_error) {
		disk_error = err;
		dft_debug("writing the trace failed: %s; recording stops", strerror(err));
	}
}

/* Write one packet (whole, or nothing: the file keeps whole packets). */
static void packet_write(struct ring_buf *b, uint8_t *page, size_t len, uint64_t events)
{
	uint64_t disc =
	    get_u64(page + PKT_DISCARDED) + __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED);
	if (disc < b->last_disc)
		disc = b->last_disc;
	put_u64(page + PKT_DISCARDED, disc);
	if (disk_error) {
		b->lost_consumer += events;
		disk_lost += events;
		return;
	}
	int err = b->fd < 0 ? stream_open(b) : 0;
	size_t done = 0;
	while (!err && done < len) {
		ssize_t n = write(b->fd, page + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
		} else if (n == 0) {
			err = -EIO;
		} else {
			done += (size_t)n;
		}
	}
	if (err) {
		if (done && ftruncate(b->fd, (off_t)b->file_bytes) == 0)
			lseek(b->fd, (off_t)b->file_bytes, SEEK_SET);
		disk_failed(-err);
		b->lost_consumer += events;
		disk_lost += events;
		return;
	}
	b->file_bytes += len;
	b->events_written += events;
	b->last_disc = disc;
}

static bool page_complete(struct ring_buf *b, uint64_t vp, uint64_t *cw)
{
	*cw = __atomic_load_n(&b->commit[vp & (b->pages - 1)], __ATOMIC_ACQUIRE);
	return (uint32_t)*cw == b->page_size;
}

static uint8_t *page_addr(struct ring_buf *b, uint64_t vp)
{
	return b->data + ((vp << b->page_shift) & b->buf_mask);
}

static size_t page_len(struct ring_buf *b, uint8_t *page)
{
	uint64_t bits = get_u64(page + PKT_CONTENT_SIZE);
	if (bits % 8 || bits / 8 < RING_HDR_SIZE || bits / 8 > b->page_size)
		return 0;
	return (size_t)(bits / 8);
}

/* Live buffer, no-overwrite: write the pages the writer left complete. */
static bool buf_drain(struct ring_buf *b)
{
	bool did = false;
	uint64_t cur = __atomic_load_n(&b->offset, __ATOMIC_ACQUIRE) >> b->page_shift;
	uint64_t vp = b->consumed, cw;
	while (vp < cur && page_complete(b, vp, &cw)) {
		uint8_t *page = page_addr(b, vp);
		size_t len = page_len(b, page);
		if (len)
			packet_write(b, page, len, cw >> 32);
		else
			b->lost_consumer += cw >> 32; /* cannot happen */
		vp++;
		__atomic_store_n(&b->consumed, vp, __ATOMIC_RELEASE);
		did = true;
	}
	return did;
}

/* The writer is quiescent (dead, or stopped with nest == 0, or stuck when
 * STUCK): write everything the buffer holds, oldest first. */
static void buf_flush(struct ring_buf *b, bool stuck)
{
	uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_ACQUIRE);
	uint64_t cur = off >> b->page_shift, pos = off & (b->page_size - 1);
	uint64_t first = b->consumed, cw;
	if (pos == b->page_size - 1)
		pos = __atomic_load_n(&b->plug_pos,
				      __ATOMIC_RELAXED); /* plugged: see ring_switch() */
	if (cur + 1 > b->pages && first < cur + 1 - b->pages)
		first = cur + 1 - b->pages;
	uint64_t vp = first;
	for (; vp < cur; vp++) {
		if (!page_complete(b, vp, &cw))
			break;
		uint8_t *page = page_addr(b, vp);
		size_t len = page_len(b, page);
		if (len)
			packet_write(b, page, len, cw >> 32);
	}
	if (vp == cur) {
		cw = __atomic_load_n(&b->commit[cur & (b->pages - 1)], __ATOMIC_ACQUIRE);
		if (!stuck && (uint32_t)cw == pos) {
			uint8_t *page = page_addr(b, cur);
			uint64_t ev = cw >> 32;
			uint64_t disc = __atomic_load_n(&b->lost, __ATOMIC_RELAXED);
			if (ev || disc + b->overwritten > b->last_disc) {
				uint64_t now = clock_read(), begin = get_u64(page + PKT_TS_BEGIN);
				put_u64(page + PKT_TS_END, now > begin ? now : begin);
				put_u64(page + PKT_CONTENT_SIZE, pos * 8);
				put_u64(page + PKT_PACKET_SIZE, pos * 8);
				put_u64(page + PKT_DISCARDED, disc);
				packet_write(b, page, (size_t)pos, ev);
			}
			vp++;
		}
	}
	/* What could not be written safely is lost: committed events plus
	 * the ones in flight now (a thread stuck inside an event for the whole
	 * wait of ring_quiesce: the count is then a lower bound). */
	if (vp <= cur) {
		uint64_t n = __atomic_load_n(&b->nest, __ATOMIC_RELAXED);
		for (; vp <= cur; vp++)
			n += __atomic_load_n(&b->commit[vp & (b->pages - 1)], __ATOMIC_RELAXED) >>
			     32;
		b->lost_consumer += n;
		dft_debug("thread %d was inside an event at shutdown: its last page is lost",
			  (int)b->tid);
	}
	__atomic_store_n(&b->consumed, cur + 1, __ATOMIC_RELEASE);
}

static void lost_report(struct ring_buf *b)
{
	if (b->lost_reported)
		return;
	b->lost_reported = 1;
	uint64_t n = buf_total_lost(b);
	if (!n || !have_info)
		return;
	char line[96];
	int len = snprintf(line, sizeof(line), "lost: %d %d %llu\n", (int)b->pid, (int)b->tid,
			   (unsigned long long)n);
	int fd = open(info_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)len) != len)
		dft_debug("cannot append to %s: %s", info_path, strerror(errno));
	close(fd);
}

static bool thread_alive(const struct ring_buf *b)
{
	return syscall(SYS_tgkill, (int)b->pid, (int)b->tid, 0) == 0 || errno != ESRCH;
}

static void buf_unlink(struct ring_buf *b)
{
	struct ring_buf *h = b;
	if (__atomic_compare_exchange_n(&ring_head, &h, b->next, false, __ATOMIC_SEQ_CST,
					__ATOMIC_RELAXED))
		return;
	for (struct ring_buf *p = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); p; p = p->next)
		if (p->next == b) {
			__atomic_store_n(&p->next, b->next, __ATOMIC_RELEASE);
			return;
		}
}

/* Flushed: the file goes too (nothing left for the recorder to recover). */
static void buf_free(struct ring_buf *b)
{
	if (b->fd >= 0)
		close(b->fd);
	if (b->shm_path[0])
		unlink(b->shm_path);
	munmap(b, b->map_size);
}

/* One pass over the buffers; list_lock held. Returns whether it did work
 * and sets *busy when a marked thread is still running. */
static bool consumer_pass(bool check_all, bool *busy)
{
	bool did = false;
	struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE), *next;
	for (; b; b = next) {
		if (emerg_yield())
			break;
		next = b->next;
		if (!cfg_overwrite && !cfg_stall) {
			did |= buf_drain(b);
			stream_close(b);
		}
		bool exiting = __atomic_load_n(&b->exiting, __ATOMIC_RELAXED);
		if (!exiting && !check_all)
			continue;
		if (cfg_stall || thread_alive(b)) {
			*busy |= exiting;
			continue;
		}
		/* Gone: nobody writes it any more. */
		buf_flush(b, false);
		stream_close(b);
		lost_report(b);
		lost_freed += buf_total_lost(b);
		buf_unlink(b);
		buf_free(b);
		did = true;
	}
	return did;
}

/* Stop every writer and wait for the in-flight events (bounded). */
static void ring_quiesce(void)
{
	struct ring_buf *b;
	for (b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next)
		__atomic_store_n(&b->stop, 1, __ATOMIC_SEQ_CST);
	/* Every thread runs a full barrier: a writer that missed stop has its
	 * nest++ visible now (asymmetric Dekker; the writer has a compiler
	 * barrier only). */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		full_fence();
	uint64_t deadline = vdso_now() + QUIESCE_WAIT_NS;
	/* Once nest was 0 after the stop, the writer can reserve nothing more
	 * (its next begin sees stop), even though nest still flickers while
	 * it keeps calling ring_event_begin: remember it. */
	for (b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		b->quiet = 0;
		for (;;) {
			if (emerg_yield())
				return;
			__atomic_store_n(&ring_waiting, 1, __ATOMIC_SEQ_CST);
			uint32_t seq = __atomic_load_n(&ring_wake_seq, __ATOMIC_SEQ_CST);
			if (!__atomic_load_n(&b->nest, __ATOMIC_SEQ_CST)) {
				b->quiet = 1;
				break;
			}
			uint64_t now = vdso_now();
			if (now >= deadline || !thread_alive(b))
				break;
			consumer_wait(seq, deadline - now < 10000000 ? deadline - now : 10000000);
		}
	}
}

static void consumer_final(void)
{
	ring_quiesce();
	uint64_t total = lost_freed;
	struct ring_buf *b, *next;
	for (b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = next) {
		if (emerg_yield())
			return;
		next = b->next;
		bool alive = thread_alive(b);
		buf_flush(b, alive && !b->quiet);
		lost_report(b);
		total += buf_total_lost(b);
		stream_close(b);
		if (!alive) {
			lost_freed += buf_total_lost(b);
			buf_unlink(b);
			buf_free(b);
		}
	}
	uint64_t nobuf = __atomic_exchange_n(&lost_nobuf, 0, __ATOMIC_RELAXED);
	if (nobuf)
		dft_log("no memory for trace buffers: %llu events lost", (unsigned long long)nobuf);
	if (disk_error)
		dft_log("cannot write trace to %s: %s; %llu events lost", ctf_dir,
			strerror(disk_error), (unsigned long long)(total + nobuf));
}

static void *consumer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "dynftrace-rec");
	uint64_t next_check = vdso_now() + LIVENESS_NS;
	for (;;) {
		__atomic_store_n(&ring_waiting, 1, __ATOMIC_SEQ_CST);
		uint32_t seq = __atomic_load_n(&ring_wake_seq, __ATOMIC_SEQ_CST);
		uint64_t wait = FLUSH_INTERVAL_NS;
		uint64_t cw = clk_tick();
		if (cw < wait)
			wait = cw;
		pthread_mutex_lock(&list_lock);
		if (!emerg_enter()) {
			pthread_mutex_unlock(&list_lock);
			break; /* a fatal signal: the dying thread has the buffers */
		}
		if (__atomic_load_n(&consumer_stop, __ATOMIC_ACQUIRE)) {
			consumer_final();
			emerg_leave();
			pthread_mutex_unlock(&list_lock);
			break;
		}
		uint64_t now = vdso_now();
		bool all = now >= next_check, busy = false;
		if (all)
			next_check = now + LIVENESS_NS;
		bool did = consumer_pass(all, &busy);
		bool mine = emerg_leave();
		pthread_mutex_unlock(&list_lock);
		if (!mine)
			break; /* handed over to a dying thread */
		if (busy && wait > EXITING_POLL_NS)
			wait = EXITING_POLL_NS;
		if (!did)
			consumer_wait(seq, wait);
	}
	__atomic_store_n(&ring_waiting, 0, __ATOMIC_RELAXED);
	return NULL;
}

/* ctl_lock held. */
static int consumer_start(void)
{
	pthread_attr_t attr;
	sigset_t all;
	int err = pthread_attr_init(&attr);
	if (err)
		return -err;
	sigfillset(&all); /* SIGXFSZ too: a file size limit gives EFBIG */
	pthread_attr_setsigmask_np(&attr, &all);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	__atomic_store_n(&consumer_stop, 0, __ATOMIC_RELEASE);
	err = pthread_create(&consumer_thread, &attr, consumer_main, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	consumer_up = 1;
	return 0;
}

/* ---- API ---------------------------------------------------------------- */

void ring_config_size(struct ring_config *cfg, size_t buffer_kb)
{
	size_t bytes =
	    buffer_kb ? buffer_kb * 1024 : (size_t)RING_DEFAULT_PAGE_SIZE * RING_DEFAULT_PAGES;
	size_t ps = RING_DEFAULT_PAGE_SIZE;
	while (ps > 4096 && bytes / ps < 4)
		ps /= 2;
	size_t np = bytes / ps;
	while (np & (np - 1))
		np &= np - 1;
	cfg->page_size = ps;
	cfg->pages = np < 2 ? 2 : np;
}

int ring_init(const struct ring_config *cfg)
{
	int err = 0;
	if (!cfg || !cfg->ctf_dir)
		return -EINVAL;
	size_t ps = cfg->page_size ? cfg->page_size : RING_DEFAULT_PAGE_SIZE;
	size_t np = cfg->pages ? cfg->pages : RING_DEFAULT_PAGES;
	if (ps < 4096 || ps > (1u << 30) || (ps & (ps - 1)) || np < 2 || np > (1u << 20))
		return -EINVAL;
	while (np & (np - 1)) /* a power of two, rounded up */
		np += np & -np;
	pthread_mutex_lock(&ctl_lock);
	if (ring_state != RING_OFF) {
		err = -EBUSY;
		goto out;
	}
	if (snprintf(ctf_dir, sizeof(ctf_dir), "%s", cfg->ctf_dir) >= (int)sizeof(ctf_dir) ||
	    (cfg->info_path && snprintf(info_path, sizeof(info_path), "%s", cfg->info_path) >=
				   (int)sizeof(info_path))) {
		err = -ENAMETOOLONG;
		goto out;
	}
	have_info = cfg->info_path != NULL;
	image_key[0] = 0;
	if (cfg->img &&
	    snprintf(image_key, sizeof(image_key), "%s", cfg->img) >= (int)sizeof(image_key)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	/* Shared buffer files (section 6), for a recording with an info file. */
	const char *e = getenv("DYNFTRACE_SHM");
	shm_dir[0] = 0;
	if (e && *e == '/' && have_info &&
	    snprintf(shm_dir, sizeof(shm_dir), "%s", e) >= (int)sizeof(shm_dir))
		shm_dir[0] = 0;
	e = getenv("DYNFTRACE_RING_TEST_NOSHM");
	cfg_test_noshm = e && *e && strcmp(e, "0");
	e = getenv("DYNFTRACE_RING_TEST_STALL");
	cfg_stall = e && *e && strcmp(e, "0");
	e = getenv("DYNFTRACE_CLOCK");
	clk_want = 0;
	if (e && !strcmp(e, "vdso"))
		clk_want = -1;
	else if (e && !strcmp(e, "tsc"))
		clk_want = 1;
	else if (e && *e)
		dft_log("DYNFTRACE_CLOCK=%s: expected vdso or tsc; choosing", e);
	if (clk_want == 0)
		clk_want = arch_cycles_constant() ? 1 : -1;
	if (clk_want < 0)
		__atomic_store_n(&clk_mode, CLK_VDSO, __ATOMIC_RELEASE);
	else if (!clk_calibrating)
		clk_calibrating = 1;
	err = metadata_init();
	if (err)
		goto out;
	/* membarrier for ring_quiesce (the runtime registers too; idempotent). */
	syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
	disk_error = 0;
	disk_lost = 0;
	lost_freed = 0;
	emerg_reset(false);
	info_started();
	/* Buffers of threads that outlived a previous recording: start over. */
	/* (they keep their geometry; new buffers get the new one) */
	pthread_mutex_lock(&list_lock);
	for (struct ring_buf *b = ring_head; b; b = b->next) {
		memcpy(b->hdr_tmpl + PKT_UUID, trace_uuid, 16);
		buf_reset(b);
		/* its file went at the last shutdown: anonymous memory now */
		if (!b->shm_path[0])
			info_img_line("noshm:", true, (uint64_t)b->tid);
		__atomic_store_n(&b->stop, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&list_lock);
	cfg_page_size = ps;
	cfg_pages = np;
	cfg_overwrite = cfg->overwrite;
	__atomic_store_n(&ring_state, RING_ON, __ATOMIC_SEQ_CST);
	err = consumer_start();
	if (err)
		__atomic_store_n(&ring_state, RING_OFF, __ATOMIC_SEQ_CST);
out:
	pthread_mutex_unlock(&ctl_lock);
	return err;
}

void ring_shutdown(void)
{
	pthread_mutex_lock(&ctl_lock);
	if (ring_state != RING_ON) {
		pthread_mutex_unlock(&ctl_lock);
		emerg_wait_done();
		return;
	}
	__atomic_store_n(&ring_state, RING_STOPPING, __ATOMIC_SEQ_CST);
	__atomic_store_n(&consumer_needed, 0, __ATOMIC_RELAXED);
	if (!consumer_up && __atomic_load_n(&ring_head, __ATOMIC_SEQ_CST))
		consumer_start(); /* a child that never started its own */
	if (consumer_up) {
		__atomic_store_n(&consumer_stop, 1, __ATOMIC_SEQ_CST);
		ring_wake_force();
		pthread_join(consumer_thread, NULL);
		consumer_up = 0;
	} else {
		pthread_mutex_lock(&list_lock);
		if (emerg_enter()) {
			consumer_final();
			emerg_leave();
		}
		pthread_mutex_unlock(&list_lock);
	}
	/* Everything is flushed: the files may go (the mappings stay, for
	 * threads that still run; a later recording uses them anonymously). */
	pthread_mutex_lock(&list_lock);
	for (struct ring_buf *b = ring_head; b; b = b->next) {
		if (b->shm_path[0]) {
			unlink(b->shm_path);
			b->shm_path[0] = 0;
		}
	}
	pthread_mutex_unlock(&list_lock);
	/* Last: a process killed before this line did not finish its flush
	 * (the recorder then checks its buffers; docs/FORMAT.md). */
	info_img_line("flushed:", false, 0);
	__atomic_store_n(&ring_state, RING_OFF, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&ctl_lock);
	emerg_wait_done();
}

void ring_thread_exit(void)
{
	struct ring_buf *b = ring_tls;
	if (!b || b->exiting)
		return;
	__atomic_store_n(&b->exiting, 1, __ATOMIC_RELAXED);
	ring_wake_force();
}

/*
 * fork (section 6). The child gets the parent's shared buffers: from here
 * to the child handler, this thread must not write into its own, so it
 * has none (what it traces meanwhile is counted lost: ring_tls_state says
 * CREATING). list_lock keeps every stream file closed and the list still.
 */
void ring_atfork_prepare(void)
{
	pthread_mutex_lock(&list_lock);
	ring_tls_forking = ring_tls;
	ring_tls_state_forking = ring_tls_state;
	if (ring_tls_state != TLS_CREATING) {
		ring_tls_state = TLS_CREATING;
		barrier();
		ring_tls = NULL;
	}
}

void ring_atfork_parent(void)
{
	struct ring_buf *b = ring_tls_forking;
	if (ring_tls_state_forking != TLS_CREATING) {
		ring_tls = b;
		barrier();
		ring_tls_state = ring_tls_state_forking;
		/* Our losses while forking: without a buffer yet they wait for
		 * it in ring_tls_early_lost, as usual. */
		uint64_t early = ring_tls_early_lost;
		if (b && early) {
			ring_tls_early_lost = 0;
			local_add(&b->lost, early);
		} else if (early && ring_tls_state == TLS_FAILED) {
			ring_tls_early_lost = 0;
			__atomic_fetch_add(&lost_nobuf, early, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&list_lock);
}

void ring_atfork_child(void)
{
	/* Forget the parent's buffers before unmapping them: a signal handler
	 * of this thread must not write to one. */
	ring_tls = NULL;
	ring_tls_state = TLS_NONE;
	ring_tls_early_lost = 0;
	ring_tls_forking = NULL;
	barrier();
	struct ring_buf *b = ring_head, *next;
	ring_head = NULL;
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	ctl_lock = fresh;
	list_lock = fresh;
	ring_waiting = 0;
	consumer_up = 0;
	consumer_stop = 0;
	lost_nobuf = 0;
	lost_freed = 0;
	disk_lost = 0;
	disk_error = 0;	  /* the child tries for itself */
	image_key[0] = 0; /* the child's streams: stream-CHILDPID-TID */
	if (ring_state == RING_STOPPING)
		ring_state = RING_OFF;
	consumer_needed = ring_state == RING_ON;
	/* The parent's: no stream file was open at the fork (list_lock), and
	 * shared fields are the parent's to change: unmap only. */
	for (; b; b = next) {
		next = b->next;
		munmap(b, b->map_size);
	}
	emerg_reset(true); /* now a fatal signal may flush the child's buffers */
}

void ring_set_img(const char *img)
{
	pthread_mutex_lock(&list_lock); /* the consumer names files under it */
	snprintf(image_key, sizeof(image_key), "%s", img ? img : "");
	for (struct ring_buf *b = ring_head; b; b = b->next)
		memcpy(b->img, image_key, sizeof(b->img));
	/* A fork child's image (trace.c names it before its first event):
	 * it records from here, as after ring_init. */
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_ON)
		info_started();
	pthread_mutex_unlock(&list_lock);
}

int ring_for_each_thread(void (*cb)(const struct ring_thread_stats *st, void *data), void *data)
{
	int n = 0;
	pthread_mutex_lock(&list_lock);
	for (struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next) {
		struct ring_thread_stats st = {
		    .tid = b->tid,
		    .events = b->events_written,
		    .lost = buf_total_lost(b),
		    .bytes = b->file_bytes,
		};
		if (cb)
			cb(&st, data);
		n++;
	}
	pthread_mutex_unlock(&list_lock);
	return n;
}

const char *ring_clock_name(void)
{
	return __atomic_load_n(&clk_mode, __ATOMIC_ACQUIRE) == CLK_TSC ? "tsc" : "vdso";
}

uint64_t ring_clock_error_ns(void)
{
	return __atomic_load_n(&clk_last_err, __ATOMIC_RELAXED);
}

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

enum { EM_IDLE = 0, EM_CONSUMER = 1, EM_WANT = 2, EM_DYING = 3 };

#define EMERG_WAIT_NS 5000000000ull /* for the consumer's hand-over */
#define EMERG_SPIN    200	    /* snapshots of a busy writer's page */
#define EMERG_SNAP    1024	    /* buffers whose losses are taken at the stop */

static uint32_t emerg_state;
static pid_t emerg_owner;
static pid_t emerg_by;
static uint32_t emerg_done;
static pid_t emerg_pid;
static int emerg_disk_error;
/* The flusher's: each buffer's `lost` when writers stopped (list order).
 * What a thread that keeps running tries to trace after that is not part
 * of the recording (it ends at the fatal signal) and not counted. */
static uint64_t emerg_lost0[EMERG_SNAP];
HIDDEN void (*ring_fatal_hook)(int sig);

static bool emerg_enter(void)
{
	uint32_t v = EM_IDLE;
	__atomic_store_n(&emerg_owner, sys_gettid(), __ATOMIC_RELAXED);
	return __atomic_compare_exchange_n(&emerg_state, &v, EM_CONSUMER, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

static void emerg_handover(void)
{
	__atomic_store_n(&emerg_state, EM_DYING, __ATOMIC_SEQ_CST);
	sys_futex(&emerg_state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

static bool emerg_yield(void)
{
	uint32_t v = __atomic_load_n(&emerg_state, __ATOMIC_ACQUIRE);
	if (likely(v == EM_CONSUMER))
		return false;
	if (v == EM_WANT)
		emerg_handover();
	return true;
}

static bool emerg_leave(void)
{
	uint32_t v = EM_CONSUMER;
	if (__atomic_compare_exchange_n(&emerg_state, &v, EM_IDLE, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return true;
	if (v == EM_WANT)
		emerg_handover();
	return false;
}

/* ring_init (ALL false: only this process's pid) and the fork child (ALL:
 * the parent's state is not the child's). */
static void emerg_reset(bool all)
{
	if (all) {
		emerg_state = EM_IDLE;
		emerg_owner = 0;
		emerg_by = 0;
		emerg_done = 0;
		emerg_disk_error = 0;
	}
	__atomic_store_n(&emerg_pid, getpid(), __ATOMIC_RELEASE);
}

/* Async-signal-safe formatting: append S to the buffer at *P, END excluded. */
static bool emerg_cat(char **p, char *end, const char *s)
{
	while (*s) {
		if (*p >= end)
			return false;
		*(*p)++ = *s++;
	}
	return true;
}

static bool emerg_cat_u64(char **p, char *end, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n) {
		if (*p >= end)
			return false;
		*(*p)++ = tmp[--n];
	}
	return true;
}

static uint64_t emerg_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One line appended to the info file (O_APPEND: whole). */
static void emerg_info_line(const char *line, size_t len)
{
	if (!have_info)
		return;
	int fd = open(info_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = write(fd, line, len);
	(void)n;
	close(fd);
}

/* "KEY IMG[ N]" appended to the info file; IMG is image_key, or the pid
 * while the image has no name. System calls only (buf_map may run in a
 * signal handler). */
static void info_img_line(const char *key, bool has_n, uint64_t n)
{
	char line[96], *p = line, *end = line + sizeof(line);
	if (emerg_cat(&p, end, key) && emerg_cat(&p, end, " ") &&
	    (image_key[0] ? emerg_cat(&p, end, image_key)
			  : emerg_cat_u64(&p, end, (uint64_t)getpid())) &&
	    (!has_n || (emerg_cat(&p, end, " ") && emerg_cat_u64(&p, end, n))) &&
	    emerg_cat(&p, end, "\n"))
		emerg_info_line(line, (size_t)(p - line));
}

/* "started: IMG START": this image records from now on, until its
 * "flushed:" (ring_shutdown) or "signal:" line; START (its process's start
 * time, 0 unknown) lets the recorder tell the process from a later one with
 * the same pid (docs/FORMAT.md). Before any buffer of the image exists. */
static void info_started(void)
{
	struct ring_proc p;
	info_img_line("started:", true, ring_proc_stat(0, &p) ? 0 : p.start);
}

/* B's "lost:" line; LOST0: its writer's own count when writers stopped. */
static void emerg_lost_line(struct ring_buf *b, uint64_t lost0)
{
	if (b->lost_reported)
		return;
	b->lost_reported = 1;
	uint64_t n = lost0 + __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED) + b->lost_consumer;
	char line[96], *p = line, *end = line + sizeof(line);
	if (!n || !emerg_cat(&p, end, "lost: ") || !emerg_cat_u64(&p, end, (uint64_t)b->pid) ||
	    !emerg_cat(&p, end, " ") || !emerg_cat_u64(&p, end, (uint64_t)b->tid) ||
	    !emerg_cat(&p, end, " ") || !emerg_cat_u64(&p, end, n) || !emerg_cat(&p, end, "\n"))
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
		uint64_t now = clock_read(), begin = get_u64(hdr + PKT_TS_BEGIN);
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
		__builtin_ia32_pause();
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

/*
 * Another thread flushes: wait (bounded) until it has finished; its signal
 * then ends the process. For a second dying thread, and for ring_shutdown
 * (exit, exec), so that the process does not exit under the flusher's
 * writes. Returns at once when nobody flushes, or the caller does.
 */
static void emerg_wait_done(void)
{
	pid_t by = __atomic_load_n(&emerg_by, __ATOMIC_ACQUIRE);
	if (!by || by == sys_gettid())
		return;
	uint64_t deadline = emerg_ns() + 2 * EMERG_WAIT_NS;
	while (!__atomic_load_n(&emerg_done, __ATOMIC_ACQUIRE)) {
		uint64_t now = emerg_ns();
		if (now >= deadline)
			break;
		struct timespec ts = {0, 10000000};
		sys_futex(&emerg_done, FUTEX_WAIT_PRIVATE, 0, &ts);
	}
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
	if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_OFF)
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
			__atomic_store_n(&b->stop, 1, __ATOMIC_SEQ_CST);
		}
		if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
			full_fence();
		i = 0;
		for (b = head; b; b = b->next, i++) {
			uint64_t lost0 = i < EMERG_SNAP
					     ? emerg_lost0[i]
					     : __atomic_load_n(&b->lost, __ATOMIC_RELAXED);
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
