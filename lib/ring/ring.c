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
 *   end:    commit[slot] += size | 1 << 32   (add, no lock prefix; nothing
 *                                             waits for its result)
 *           nest--
 *           (a page an outer event's commit completes, after a nested one
 *           switched pages, waits for the consumer's next pass; a stop
 *           polls the nest: ring_quiesce)
 *
 * The x86-64 assembly writers do the same against two owner-kept
 * caches: the current page (ring_cache_page: the limit an event must end
 * below, the address base, the commit word) and the clock's latch
 * (ring_clk_copy, refreshed by an outermost C writer when clk_seq moved).
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
 * waits (ring_waiting), after a page is complete and a quarter of the
 * buffer's pages wait (or at a stop). Each pass writes the
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
 * A ring without a session directory (live control without `record`) is
 * in overwrite mode and has no disk: the consumer then only keeps the
 * clock, retires the buffers of exited threads and frees them. Retired
 * buffers (`gone`) stay on the list for the other readers (ring_read.c)
 * while one holds them, and the newest keep_gone of them unless cleared.
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
 * had not written (lib/ring/ring_salvage.c, the same validation as the emergency
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
 * its events meanwhile are kept aside, ring_fork.c, and each process
 * writes its own afterwards, with their times) and list_lock is held, so no
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
 * | cfg, dirs, uuid, stall,     | init, ctl_lock, state OFF  | all, after state ON     |
 * |   ring_disk                 |                            |                         |
 * | cfg_geom                    | init, ring_set_size_kb     | buf_create (atomic)     |
 * |                             | (ctl_lock)                 |                         |
 * | ring_head                   | writers (CAS push);        | consumer, stats,        |
 * |                             | consumer (unlink, list_lock| readers (read_lock),    |
 * |                             | and read_lock)             | atfork child            |
 * | keep_gone                   | ring_keep_exited (atomic)  | consumer                |
 * | buf_serial                  | buf_create (atomic add)    | buf_create              |
 * | ring_fork_gen               | atfork child               | readers                 |
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

#include "hooks.h"
#include "clock.h"
#include "ctf.h"
#include "ring.h"
#include "ring_fast.h"
#include "ring_int.h"

/* Consumer timing. */
#define FLUSH_INTERVAL_NS 100000000ull	/* idle wake-up: liveness, clock */
#define EXITING_POLL_NS	  2000000ull	/* while a marked thread still runs */
#define LIVENESS_NS	  1000000000ull /* check every thread this often */
#define QUIESCE_WAIT_NS	  2000000000ull /* shutdown: wait for in-flight events */

/* ---- configuration and global state ---------------------------------- */

HIDDEN int ring_state;
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
HIDDEN pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
HIDDEN struct ring_buf *ring_head;
HIDDEN char ctf_dir[PATH_MAX];
HIDDEN char info_path[PATH_MAX];
HIDDEN char image_key[32]; /* IMG of the stream files; "": the pid */
HIDDEN int have_info;
/* The geometry of buffers made from now on: page size and pages in one word
 * (log2 page size | pages << 8), so that a writer never reads half a change. */
#define GEOM(ps, np) ((uint64_t)__builtin_ctzl(ps) | (uint64_t)(np) << 8)
static uint64_t cfg_geom = GEOM(RING_DEFAULT_PAGE_SIZE, RING_DEFAULT_PAGES);
HIDDEN int cfg_overwrite;
HIDDEN int ring_disk; /* recording into a session directory (else memory only) */
HIDDEN pthread_mutex_t read_lock = PTHREAD_MUTEX_INITIALIZER;
HIDDEN unsigned long ring_fork_gen;
static unsigned keep_gone;  /* retired buffers kept for readers (ring_keep_exited) */
static uint64_t buf_serial; /* the last buffer's ring_buf.serial */
static int cfg_stall;
static uint8_t trace_uuid[16];

HIDDEN uint32_t ring_waiting;
HIDDEN uint32_t ring_wake_seq;
static pthread_t consumer_thread;
static int consumer_up;
static int consumer_stop;
static int consumer_pending; /* created, not yet running: see dft_await_started */
static int consumer_needed;
HIDDEN int disk_error;
static uint64_t disk_lost;
static uint64_t lost_nobuf;
static uint64_t lost_freed; /* consumer: losses of buffers already freed */
static char shm_dir[128];   /* DYNFTRACE_SHM: where buffer files go; "": anonymous */
static int cfg_test_noshm;  /* DYNFTRACE_RING_TEST_NOSHM: as if no file could be made */

HIDDEN __thread struct ring_buf *ring_tls __attribute__((tls_model("initial-exec")));

/* Owner thread only: buffer creation state and events lost before it. */
static __thread uint32_t ring_tls_state __attribute__((tls_model("initial-exec")));
static __thread uint64_t ring_tls_early_lost __attribute__((tls_model("initial-exec")));
enum { TLS_NONE = 0, TLS_CREATING = 1, TLS_READY = 2, TLS_FAILED = 3, TLS_FORKING = 4 };
/* Owner thread: its buffer and state kept aside across fork (section 6). */
static __thread struct ring_buf *ring_tls_forking __attribute__((tls_model("initial-exec")));
static __thread uint32_t ring_tls_state_forking __attribute__((tls_model("initial-exec")));

/* Async-signal-safe formatting and info lines (the emergency flush's). */

long sys_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

pid_t sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- consumer wake-up ------------------------------------------------- */

/* Writers (any context): wake the consumer only if it says it waits. */

void ring_wake_force(void)
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
	__atomic_store_n(&b->retired, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->clear_off, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->clear_ev, 0, __ATOMIC_RELAXED);
	b->lost_consumer = b->events_written = b->file_bytes = b->last_disc = 0;
	b->lost_reported = 0;
	b->fd = -1;
	b->path[0] = 0; /* a new recording: a new file */
	b->last_ts = 0; /* the first event gets an extended header */
	/* No assembly writer uses the old page meanwhile (the limit is
	 * behind any position). */
	__atomic_store_n(&b->wlimit, 0, __ATOMIC_RELAXED);
	b->cseq = UINT64_C(1) << 32;
	barrier();
	page_open(b, b->data, ring_now(), 0);
	b->commit[0] = RING_HDR_SIZE;
	__atomic_store_n(&b->offset, RING_HDR_SIZE, __ATOMIC_RELAXED);
	barrier();
	ring_cache_page(b, 0);
}

/* The recording resumed after a failed exec (ring_config.resume): B's
 * stream goes on in the same file, its packet numbers and loss counts
 * with it, from the page after the last one ring_shutdown wrote (it wrote
 * them all: consumed is past the current page). */
static void buf_resume(struct ring_buf *b)
{
	uint64_t vp = __atomic_load_n(&b->consumed, __ATOMIC_RELAXED);
	memset(b->commit, 0, b->pages * sizeof(uint64_t));
	b->fd = -1;
	b->lost_reported = 0;
	b->last_ts = 0; /* the first event gets an extended header */
	__atomic_store_n(&b->wlimit, 0, __ATOMIC_RELAXED);
	b->cseq = UINT64_C(1) << 32;
	barrier();
	page_open(b, page_addr(b, vp), ring_now(), vp);
	b->commit[vp & (b->pages - 1)] = RING_HDR_SIZE;
	__atomic_store_n(&b->offset, (vp << b->page_shift) + RING_HDR_SIZE, __ATOMIC_RELAXED);
	barrier();
	ring_cache_page(b, vp);
}

static void count_lost_nobuf(uint64_t n)
{
	if (ring_tls_state == TLS_FORKING)
		fork_side_lost(n);
	else if (ring_tls_state == TLS_CREATING || ring_tls_state == TLS_NONE)
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
void *buf_map(size_t len, size_t head, pid_t tid, char *shm_path, uint64_t *populated)
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
struct ring_buf *buf_create(void)
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
	uint64_t geom = __atomic_load_n(&cfg_geom, __ATOMIC_RELAXED);
	size_t ps = (size_t)1 << (geom & 0xff), np = (size_t)(geom >> 8);
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
	b->serial = __atomic_add_fetch(&buf_serial, 1, __ATOMIC_RELAXED);
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
		__atomic_fetch_or(&b->stop, RING_STOP, __ATOMIC_RELEASE);
	ring_tls = b; /* now our signal handlers use it */
	barrier();
	uint64_t early = ring_tls_early_lost;
	ring_tls_early_lost = 0;
	if (early)
		local_add(&b->lost, early);
	ring_tls_state = TLS_READY;
	return b;
}

/* ---- the recorder's life ------------------------------------------------ */

/* DYNFTRACE_RECORDER's process (0: none), read by ring_init; its start
 * time (0: not given). Consumer thread only, after ring_init. */
static pid_t recorder_pid;
static uint64_t recorder_start;
HIDDEN void (*ring_orphan_hook)(pid_t recorder);

static bool recorder_alive(void)
{
	struct ring_proc p;
	int err = ring_proc_stat(recorder_pid, &p);
	if (err == -ENOENT)
		return false;
	return err || !recorder_start || p.start == recorder_start;
}

static void *orphan_main(void *arg)
{
	pid_t rec = (pid_t)(intptr_t)arg;
	void (*hook)(pid_t) = __atomic_load_n(&ring_orphan_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(rec);
	else
		ring_shutdown();
	return NULL;
}

/* Consumer thread, once a second: the recorder gone (killed before it
 * could end the recording), the recording ends, once. */
static void recorder_check(void)
{
	static pid_t said;
	if (!recorder_pid || said == recorder_pid || recorder_alive())
		return;
	said = recorder_pid;
	pthread_t th;
	if (dft_thread_create(&th, orphan_main, (void *)(intptr_t)recorder_pid, 1))
		dft_log("its recorder (process %d) is gone, and the recording cannot be ended",
			(int)recorder_pid);
}

/* ---- writer ------------------------------------------------------------ */

/* Count N events of B's thread as lost, unless the recording has ended
 * (RING_STOP: process exit, detach, fatal signal): a call made after the
 * end is outside the recording, not lost from it. */
static inline void buf_drop(struct ring_buf *b, uint64_t n)
{
	if (!(__atomic_load_n(&b->stop, __ATOMIC_RELAXED) & RING_STOP))
		local_add(&b->lost, n);
}

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

/* The event does not fit the current page: move to the next one. AT: the
 * event's time if given (ring_event_begin_at), else 0. */
static __attribute__((noinline)) uint8_t *ring_switch(struct ring_buf *b, uint32_t n, unsigned id,
						      size_t payload, uint64_t *tsp, uint64_t at)
{
	const uint32_t ps = b->page_size;
	const uint64_t pmask = ps - 1;
	for (;;) {
		uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_RELAXED);
		barrier(); /* offset, then clock: see ring_event_begin() */
		uint64_t ts = at ? at : ring_now();
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
		ring_cache_page(b, nvp);
		/* A reader that copied bytes of the slot's new lap sees the
		 * offset that reuses it (ring_read.c). */
		ring_wfence();
		b->last_ts = ts;
		/* Retire the slot's previous lap (commits of nested events that
		 * already went to the new page add up with this). */
		if (old) {
			local_add(&b->commit[nslot], -old);
			if (cfg_overwrite)
				local_add(&b->overwritten, old >> 32);
			local_add(&b->retired, RING_RETIRED_PAGE + (old >> 32));
			/* A reader that sees the new packet header sees the
			 * retired commit word. */
			ring_wfence();
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
		/* The consumer is woken once a quarter of the buffer waits (the
		 * kernel's buffer_percent), not for every page: a futex wake
		 * costs this thread microseconds (an IPI in a VM), 0.3-0.8 ns
		 * per call at one wake a page. Its timer drains the rest. */
		if (!cfg_overwrite &&
		    nvp - __atomic_load_n(&b->consumed, __ATOMIC_RELAXED) >= ((b->pages >> 2) ?: 1))
			ring_wake();
		uint8_t *p = np + RING_HDR_SIZE;
		write_header(p, id, ts, RING_EXT_HDR);
		b->nest_size[n] = size;
		*tsp = ts;
		return p + RING_EXT_HDR;
	}
}

static __attribute__((noinline)) uint8_t *ring_begin_slow(unsigned id, size_t payload,
							  uint64_t *tsp);

/*
 * buffer_size_kb changed (ring_set_size_kb): B, whose nest is 1 (ours: no
 * event in flight), is left for a buffer of the new size, which the next
 * begin makes. B goes to the consumer as if its thread had exited; a signal
 * handler that runs meanwhile writes into B (before ring_tls changes) or
 * makes the new buffer itself (after).
 */
static __attribute__((noinline)) uint8_t *ring_renew(struct ring_buf *b, unsigned id,
						     size_t payload, uint64_t *tsp)
{
	ring_tls_state = TLS_NONE;
	barrier();
	ring_tls = NULL;
	barrier();
	__atomic_store_n(&b->nest, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&b->exiting, RING_EXITING_RENEWED, __ATOMIC_RELEASE);
	return ring_begin_slow(id, payload, tsp);
}

static __attribute__((noinline)) uint8_t *ring_begin_slow(unsigned id, size_t payload,
							  uint64_t *tsp)
{
	struct ring_buf *b = ring_tls;
	if (b && payload > RING_PAYLOAD_MAX) {
		buf_drop(b, 1);
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
	if (ring_tls_state == TLS_FORKING)
		return fork_side_begin(id, payload, tsp);
	if (!buf_create())
		return NULL;
	return ring_event_begin(id, payload, tsp);
}

/* Everything the fast path does not: the vDSO clock, a retry after a
 * nested event, a page switch, a stop, a drop. nest is already N + 1. */
static __attribute__((noinline)) uint8_t *ring_reserve_slow(struct ring_buf *b, uint32_t n,
							    unsigned id, size_t payload,
							    uint64_t *tsp, uint64_t at, bool count)
{
	uint8_t *p = NULL;
	uint32_t stop = __atomic_load_n(&b->stop, __ATOMIC_ACQUIRE);
	if (likely(!stop))
		p = ring_switch(b, n, id, payload, tsp, at);
	else if (stop == RING_STOP_RENEW && n == 0 && !at)
		return ring_renew(b, id, payload, tsp);
	if (likely(p))
		return p;
	if (count)
		buf_drop(b, 1);
	barrier();
	__atomic_store_n(&b->nest, n, __ATOMIC_RELAXED);
	if (unlikely(__atomic_load_n(&b->stop, __ATOMIC_RELAXED)))
		ring_wake(); /* ring_quiesce() may wait for nest == 0 */
	return NULL;
}

/*
 * The reservation on the thread's buffer B: the clock's time, or AT when
 * given (ring_event_begin_at; a constant 0 folds that away). No call and
 * no loop (but the clock latch's), so the compiler keeps it in registers;
 * anything else goes to ring_reserve_slow().
 */
static inline __attribute__((always_inline)) uint8_t *
begin_on(struct ring_buf *b, unsigned id, size_t payload, uint64_t *tsp, uint64_t at, bool count)
{
	uint32_t n = __atomic_load_n(&b->nest, __ATOMIC_RELAXED);
	if (unlikely(n >= RING_NEST_MAX)) {
		if (count)
			buf_drop(b, 1);
		return NULL;
	}
	__atomic_store_n(&b->nest, n + 1, __ATOMIC_RELAXED);
	barrier(); /* nest before stop: see ring_quiesce() */
	if (n == 0 && unlikely(b->cseq != __atomic_load_n(&clk_seq, __ATOMIC_RELAXED)))
		ring_clk_copy(b);
	/* The offset is read before the clock: a nested event in between
	 * moves it, our cmpxchg fails and the clock is read again, so an event
	 * never lands after one with a later time. */
	uint64_t off = __atomic_load_n(&b->offset, __ATOMIC_RELAXED);
	barrier();
	uint64_t ts = at;
	uint8_t *p;
	if (unlikely(__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) ||
	    (!at && (unlikely(__atomic_load_n(&clk_mode, __ATOMIC_RELAXED) != CLK_TSC) ||
		     unlikely(!clk_tsc_read(&ts)))) ||
	    unlikely(!(p = ring_try_reserve(b, n, off, id, (uint32_t)payload, ts, tsp))))
		return ring_reserve_slow(b, n, id, payload, tsp, at, count);
	return p;
}

/* The fast path: TSC clock, the event fits the page, no nested event in
 * between. */
uint8_t *ring_event_begin(unsigned id, size_t payload, uint64_t *tsp)
{
	struct ring_buf *b = ring_tls;
	if (unlikely(!b) || unlikely(payload > RING_PAYLOAD_MAX))
		return ring_begin_slow(id, payload, tsp);
	return begin_on(b, id, payload, tsp, 0, true);
}

uint8_t *ring_event_try(unsigned id, size_t payload, uint64_t *tsp)
{
	struct ring_buf *b = ring_tls;
	if (unlikely(!b) || unlikely(payload > RING_PAYLOAD_MAX))
		return NULL;
	return begin_on(b, id, payload, tsp, 0, false);
}

/* An event at time AT (not before the stream's last), for the records
 * kept across fork (ring_fork.c); the owner thread, which has a buffer. */
static uint8_t *ring_event_begin_at(unsigned id, size_t payload, uint64_t at)
{
	struct ring_buf *b = ring_tls;
	uint64_t ts;
	if (!b || payload > RING_PAYLOAD_MAX) {
		ring_count_lost(1);
		return NULL;
	}
	return begin_on(b, id, payload, &ts, at, true);
}

void ring_event_end(uint8_t *payload)
{
	struct ring_buf *b = ring_tls;
	if (unlikely(!b)) {
		fork_side_end(payload); /* begun in the fork's window */
		return;
	}
	ring_commit(b, payload);
}

void ring_count_lost(uint64_t lost)
{
	struct ring_buf *b = ring_tls;
	if (b)
		buf_drop(b, lost);
	else if (__atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_ON)
		count_lost_nobuf(lost);
}

/* Hand-over points of the emergency flush (its section, at the end). */

/* ---- consumer ---------------------------------------------------------- */

/*
 * The consumer opens a stream file, writes the packets that are ready and
 * closes it again in each pass (stream_close), so the runtime holds no
 * descriptor between passes: none that a thousand threads would use up
 * from RLIMIT_NOFILE, none that the program could close or see in its
 * descriptor numbers.
 */
int stream_open(struct ring_buf *b)
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

bool page_complete(struct ring_buf *b, uint64_t vp, uint64_t *cw)
{
	*cw = __atomic_load_n(&b->commit[vp & (b->pages - 1)], __ATOMIC_ACQUIRE);
	return (uint32_t)*cw == b->page_size;
}

uint8_t *page_addr(struct ring_buf *b, uint64_t vp)
{
	return b->data + ((vp << b->page_shift) & b->buf_mask);
}

size_t page_len(struct ring_buf *b, uint8_t *page)
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
void buf_flush(struct ring_buf *b, bool stuck)
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
				uint64_t now = ring_now(), begin = get_u64(page + PKT_TS_BEGIN);
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
	/* One read of each count, so that the lines agree. */
	uint64_t drop = __atomic_load_n(&b->lost, __ATOMIC_RELAXED);
	uint64_t over = __atomic_load_n(&b->overwritten, __ATOMIC_RELAXED);
	uint64_t n = drop + over + b->lost_consumer;
	if (!n || !have_info)
		return;
	/* The part overwritten by design (overwrite mode keeps the newest) on
	 * its own line, so readers warn only of the rest; one write for all. */
	char line[192];
	int len = snprintf(line, sizeof(line), "lost: %d %d %llu\n", (int)b->pid, (int)b->tid,
			   (unsigned long long)n);
	if (over)
		len += snprintf(line + len, sizeof(line) - (size_t)len, "overwritten: %d %d %llu\n",
				(int)b->pid, (int)b->tid, (unsigned long long)over);
	/* The writer's own drops (a full buffer, as a rule) apart from what
	 * the consumer could not write, so that readers can say which. */
	if (drop)
		len += snprintf(line + len, sizeof(line) - (size_t)len, "dropped: %d %d %llu\n",
				(int)b->pid, (int)b->tid, (unsigned long long)drop);
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

/*
 * Nobody writes B any more (its thread is gone, or it was renewed), and
 * B's stream is complete (STUCK: as buf_flush's). The shared file goes
 * (nothing left for the recorder to recover); the memory stays for the
 * readers (ring_read.c) until buf_release frees it. list_lock held.
 */
static void buf_retire(struct ring_buf *b, bool stuck)
{
	if (ring_disk)
		buf_flush(b, stuck);
	stream_close(b);
	lost_report(b);
	lost_freed += buf_total_lost(b);
	if (b->shm_path[0]) {
		unlink(b->shm_path);
		b->shm_path[0] = 0;
	}
	__atomic_store_n(&b->gone, 1, __ATOMIC_RELEASE);
}

/* Does a reader still want retired buffer B? Those not cleared, the
 * newest keep_gone of them (the list is newest first: *KEPT counts). */
static bool buf_wanted(struct ring_buf *b, unsigned *kept)
{
	if (__atomic_load_n(&b->exiting, __ATOMIC_RELAXED) == RING_EXITING_RENEWED ||
	    __atomic_load_n(&b->clear_off, __ATOMIC_RELAXED) >=
		__atomic_load_n(&b->offset, __ATOMIC_RELAXED) ||
	    *kept >= __atomic_load_n(&keep_gone, __ATOMIC_RELAXED))
		return false;
	(*kept)++;
	return true;
}

/* Free retired buffer B unless a reader holds it (it comes back at the next
 * pass). list_lock held; read_lock keeps readers off the list meanwhile. */
static bool buf_release(struct ring_buf *b)
{
	pthread_mutex_lock(&read_lock);
	bool unused = !__atomic_load_n(&b->refs, __ATOMIC_RELAXED);
	if (unused)
		buf_unlink(b);
	pthread_mutex_unlock(&read_lock);
	if (!unused)
		return false;
	if (b->fd >= 0)
		close(b->fd);
	munmap(b, b->map_size);
	return true;
}

/* One pass over the buffers; list_lock held. Returns whether it did work
 * and sets *busy when a marked thread is still running. */
static bool consumer_pass(bool check_all, bool *busy)
{
	bool did = false;
	unsigned kept = 0;
	struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE), *next;
	for (; b; b = next) {
		if (emerg_yield())
			break;
		next = b->next;
		if (__atomic_load_n(&b->gone, __ATOMIC_RELAXED)) {
			if (!buf_wanted(b, &kept))
				did |= buf_release(b);
			continue;
		}
		if (ring_disk && !cfg_overwrite && !cfg_stall) {
			did |= buf_drain(b);
			stream_close(b);
		}
		uint32_t exiting = __atomic_load_n(&b->exiting, __ATOMIC_ACQUIRE);
		if (!exiting && !check_all)
			continue;
		if (exiting != RING_EXITING_RENEWED && (cfg_stall || thread_alive(b))) {
			*busy |= exiting != 0;
			continue;
		}
		/* Nobody writes it any more. */
		buf_retire(b, false);
		did = true;
	}
	return did;
}

/* Stop every writer and wait for the in-flight events (bounded). */
void ring_quiesce(void)
{
	struct ring_buf *b;
	for (b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = b->next)
		__atomic_fetch_or(&b->stop, RING_STOP, __ATOMIC_SEQ_CST);
	/* Every thread runs a full barrier: a writer that missed stop has its
	 * nest++ visible now (asymmetric Dekker; the writer has a compiler
	 * barrier only). */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		full_fence();
	uint64_t deadline = clock_mono_ns() + QUIESCE_WAIT_NS;
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
			uint64_t now = clock_mono_ns();
			if (now >= deadline || !thread_alive(b))
				break;
			/* A writer's commit does not wake us (ring_fast.h,
			 * ring_commit_slot): look again within a millisecond. */
			consumer_wait(seq, deadline - now < 1000000 ? deadline - now : 1000000);
		}
	}
}

void consumer_final(void)
{
	ring_quiesce();
	struct ring_buf *b, *next;
	uint64_t total = 0;
	for (b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b; b = next) {
		if (emerg_yield())
			return;
		next = b->next;
		if (__atomic_load_n(&b->gone, __ATOMIC_RELAXED))
			continue; /* written and counted (lost_freed) */
		bool alive =
		    __atomic_load_n(&b->exiting, __ATOMIC_RELAXED) != RING_EXITING_RENEWED &&
		    thread_alive(b);
		if (!alive) {
			buf_retire(b, false);
			continue;
		}
		if (ring_disk)
			buf_flush(b, !b->quiet);
		lost_report(b);
		total += buf_total_lost(b);
		stream_close(b);
	}
	total += lost_freed;
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
	dft_thread_started(&consumer_pending);
	pthread_setname_np(pthread_self(), "dynftrace-rec");
	uint64_t next_check = clock_mono_ns() + LIVENESS_NS;
	for (;;) {
		__atomic_store_n(&ring_waiting, 1, __ATOMIC_SEQ_CST);
		uint32_t seq = __atomic_load_n(&ring_wake_seq, __ATOMIC_SEQ_CST);
		uint64_t wait = FLUSH_INTERVAL_NS;
		uint64_t cw = clock_tick();
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
		uint64_t now = clock_mono_ns();
		bool all = now >= next_check, busy = false;
		if (all)
			next_check = now + LIVENESS_NS;
		bool did = consumer_pass(all, &busy);
		bool mine = emerg_leave();
		pthread_mutex_unlock(&list_lock);
		if (!mine)
			break; /* handed over to a dying thread */
		if (all)
			recorder_check();
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
	__atomic_store_n(&consumer_stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&consumer_pending, 1, __ATOMIC_RELEASE);
	int err = dft_thread_create(&consumer_thread, consumer_main, NULL, 0);
	if (err) {
		dft_pending_clear(&consumer_pending);
		return err;
	}
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

int ring_set_size_kb(size_t kb)
{
	if (kb < RING_KB_MIN || kb > RING_KB_MAX)
		return -EINVAL;
	struct ring_config c;
	ring_config_size(&c, kb);
	int err = 0;
	pthread_mutex_lock(&ctl_lock);
	if (ring_disk && ring_state != RING_OFF) {
		err = -EBUSY; /* a stream keeps its buffer */
	} else {
		__atomic_store_n(&cfg_geom, GEOM(c.page_size, c.pages), __ATOMIC_RELAXED);
		/* Every buffer is left at its owner's next event. */
		pthread_mutex_lock(&read_lock);
		for (struct ring_buf *b = __atomic_load_n(&ring_head, __ATOMIC_ACQUIRE); b;
		     b = b->next)
			__atomic_fetch_or(&b->stop, RING_STOP_RENEW, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&read_lock);
	}
	pthread_mutex_unlock(&ctl_lock);
	return err;
}

void ring_keep_exited(unsigned n)
{
	__atomic_store_n(&keep_gone, n, __ATOMIC_RELAXED);
}

size_t ring_size_kb(void)
{
	uint64_t geom = __atomic_load_n(&cfg_geom, __ATOMIC_RELAXED);
	return ((size_t)1 << (geom & 0xff)) * (size_t)(geom >> 8) / 1024;
}

int ring_init(const struct ring_config *cfg)
{
	int err = 0;
	if (!cfg)
		return -EINVAL;
	const bool disk = cfg->ctf_dir != NULL;
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
	ctf_dir[0] = info_path[0] = 0;
	if ((disk &&
	     snprintf(ctf_dir, sizeof(ctf_dir), "%s", cfg->ctf_dir) >= (int)sizeof(ctf_dir)) ||
	    (disk && cfg->info_path &&
	     snprintf(info_path, sizeof(info_path), "%s", cfg->info_path) >=
		 (int)sizeof(info_path))) {
		err = -ENAMETOOLONG;
		goto out;
	}
	have_info = disk && cfg->info_path != NULL;
	image_key[0] = 0;
	if (cfg->img &&
	    snprintf(image_key, sizeof(image_key), "%s", cfg->img) >= (int)sizeof(image_key)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	/* Shared buffer files (section 6), for a recording with an info file. */
	const char *e = dft_getenv("DYNFTRACE_SHM");
	shm_dir[0] = 0;
	if (e && *e == '/' && have_info &&
	    snprintf(shm_dir, sizeof(shm_dir), "%s", e) >= (int)sizeof(shm_dir))
		shm_dir[0] = 0;
	/* The process that records (attach): "PID START". */
	e = dft_getenv("DYNFTRACE_RECORDER");
	recorder_pid = 0;
	recorder_start = 0;
	if (e && disk) {
		char *end;
		long pid = strtol(e, &end, 10);
		if (pid > 0 && pid <= INT32_MAX) {
			recorder_pid = (pid_t)pid;
			recorder_start = strtoull(end, NULL, 10);
		}
	}
	e = dft_getenv("DYNFTRACE_RING_TEST_NOSHM");
	cfg_test_noshm = e && *e && strcmp(e, "0");
	e = dft_getenv("DYNFTRACE_RING_TEST_STALL");
	cfg_stall = e && *e && strcmp(e, "0");
	clock_configure();
	err = disk ? ctf_metadata_init(ctf_dir, trace_uuid) : 0;
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
		if (__atomic_load_n(&b->gone, __ATOMIC_RELAXED))
			continue; /* written for good; only readers look at it */
		memcpy(b->hdr_tmpl + PKT_UUID, trace_uuid, 16);
		if (cfg->resume && b->path[0])
			buf_resume(b);
		else
			buf_reset(b);
		/* its file went at the last shutdown: anonymous memory now */
		if (!b->shm_path[0])
			info_img_line("noshm:", true, (uint64_t)b->tid);
		__atomic_store_n(&b->stop, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&list_lock);
	__atomic_store_n(&cfg_geom, GEOM(ps, np), __ATOMIC_RELAXED);
	/* In memory only, buffers keep the newest events, as the kernel's. */
	cfg_overwrite = disk ? cfg->overwrite : 1;
	ring_disk = disk;
	__atomic_store_n(&ring_state, RING_ON, __ATOMIC_SEQ_CST);
	err = consumer_start();
	if (err)
		__atomic_store_n(&ring_state, RING_OFF, __ATOMIC_SEQ_CST);
out:
	pthread_mutex_unlock(&ctl_lock);
	return err;
}

int ring_vfork_child(void)
{
	pid_t p = __atomic_load_n(&emerg_pid, __ATOMIC_ACQUIRE);
	return p && (pid_t)syscall(SYS_getpid) != p;
}

int ring_recording(void)
{
	return __atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_ON;
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
		dft_thread_reap(consumer_thread);
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
	__atomic_store_n(&b->exiting, RING_EXITING_THREAD, __ATOMIC_RELEASE);
	ring_wake_force();
}

/*
 * fork (section 6). The child gets the parent's shared buffers: from here
 * to the child handler, this thread must not write into its own, so it
 * has none. What it traces meanwhile goes to ring_fork.c's records
 * (ring_tls_state says FORKING; a thread that was creating its buffer
 * keeps CREATING and counts it lost). list_lock keeps every stream file
 * closed and the list still, and serialises forks (one set of records).
 */
void ring_atfork_prepare(void)
{
	pthread_mutex_lock(&list_lock);
	dft_await_started(&consumer_pending);
	ring_tls_forking = ring_tls;
	ring_tls_state_forking = ring_tls_state;
	if (ring_tls_state != TLS_CREATING) {
		fork_side_open();
		ring_tls_state = TLS_FORKING;
		barrier();
		ring_tls = NULL;
	}
}

/* The parent's records of the fork's window into its buffer, with their
 * times (list_lock held: the next fork's prepare would reset them). A
 * thread that had no buffer yet makes it now, as its next event would. */
static void fork_side_write(void)
{
	if (!ring_tls && ring_tls_state == TLS_NONE &&
	    __atomic_load_n(&ring_state, __ATOMIC_ACQUIRE) == RING_ON)
		buf_create();
	pid_t me = fork_side_pid();
	if (!ring_tls) {
		count_lost_nobuf(fork_side_own_lost(me, true));
		return;
	}
	uint64_t pos = 0, ts;
	unsigned id;
	size_t len;
	const uint8_t *src;
	while ((src = fork_side_next(&pos, me, &id, &len, &ts))) {
		uint8_t *p = ring_event_begin_at(id, len, ts);
		if (p) { /* else counted by the ring (full) */
			memcpy(p, src, len);
			ring_event_end(p);
		}
	}
	uint64_t lost = fork_side_own_lost(me, false);
	if (lost)
		ring_count_lost(lost);
}

void ring_atfork_parent(void)
{
	struct ring_buf *b = ring_tls_forking;
	bool side = ring_tls_state == TLS_FORKING;
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
	if (side)
		fork_side_write();
	pthread_mutex_unlock(&list_lock);
}

void ring_atfork_child(void)
{
	bool side = ring_tls_state == TLS_FORKING; /* else CREATING: all lost */
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
	read_lock = fresh;
	ring_fork_gen++; /* readers' cursors name the parent's buffers */
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
	/* What this thread recorded in the fork since it is the child: lost,
	 * in its first buffer (the fork's bracket leaves nothing there but a
	 * signal handler's events; the rest are the parent's). */
	if (side && consumer_needed)
		ring_tls_early_lost = fork_side_own_lost(fork_side_pid(), true);
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

/* ---- the emergency flush's hand-over (ring_flush.c takes the buffers) ---- */

HIDDEN uint32_t emerg_state;
HIDDEN pid_t emerg_owner;
HIDDEN pid_t emerg_by;
HIDDEN uint32_t emerg_done;
HIDDEN pid_t emerg_pid;
HIDDEN int emerg_disk_error;

bool emerg_enter(void)
{
	uint32_t v = EM_IDLE;
	__atomic_store_n(&emerg_owner, sys_gettid(), __ATOMIC_RELAXED);
	return __atomic_compare_exchange_n(&emerg_state, &v, EM_CONSUMER, false, __ATOMIC_ACQ_REL,
					   __ATOMIC_ACQUIRE);
}

void emerg_handover(void)
{
	__atomic_store_n(&emerg_state, EM_DYING, __ATOMIC_SEQ_CST);
	sys_futex(&emerg_state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
}

bool emerg_yield(void)
{
	uint32_t v = __atomic_load_n(&emerg_state, __ATOMIC_ACQUIRE);
	if (likely(v == EM_CONSUMER))
		return false;
	if (v == EM_WANT)
		emerg_handover();
	return true;
}

bool emerg_leave(void)
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
void emerg_reset(bool all)
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
bool emerg_cat(char **p, char *end, const char *s)
{
	while (*s) {
		if (*p >= end)
			return false;
		*(*p)++ = *s++;
	}
	return true;
}

bool emerg_cat_u64(char **p, char *end, uint64_t v)
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

uint64_t emerg_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One line appended to the info file (O_APPEND: whole). */
void emerg_info_line(const char *line, size_t len)
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
void info_img_line(const char *key, bool has_n, uint64_t n)
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
void info_started(void)
{
	struct ring_proc p;
	info_img_line("started:", true, ring_proc_stat(0, &p) ? 0 : p.start);
}

/*
 * Another thread flushes: wait (bounded) until it has finished; its signal
 * then ends the process. For a second dying thread, and for ring_shutdown
 * (exit, exec), so that the process does not exit under the flusher's
 * writes. Returns at once when nobody flushes, or the caller does.
 */
void emerg_wait_done(void)
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

/*
 * Detach, with every other thread stopped and none inside the ring's code
 * (the tracers are off, the caller checked each thread): unmap every
 * buffer, which would outlive the runtime's unload. ring_shutdown() ended
 * the consumer before, while threads ran. Never waits: list_lock only by
 * trylock (-EAGAIN: a stopped thread holds it; the caller retries).
 */
int ring_detach_free(void)
{
	if (pthread_mutex_trylock(&list_lock))
		return -EAGAIN;
	struct ring_buf *b = __atomic_exchange_n(&ring_head, NULL, __ATOMIC_ACQ_REL), *next;
	for (; b; b = next) {
		next = b->next;
		if (b->fd >= 0)
			close(b->fd);
		if (b->shm_path[0])
			unlink(b->shm_path);
		munmap(b, b->map_size);
	}
	pthread_mutex_unlock(&list_lock);
	return 0;
}
