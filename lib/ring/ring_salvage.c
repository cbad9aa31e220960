/* SPDX-License-Identifier: MIT */
/*
 * ring_salvage.c - recovering the trace buffers of a process that died
 * without flushing them, from their shared files (ring.c, section 6), and
 * the check of a page's event prefix that this shares with the emergency
 * flush. Linked into the runtime and into the CLI: `dynftrace record` runs
 * the salvage after a process of the session died.
 *
 * The process is dead: nothing in the file moves any more. Its consumer
 * wrote the thread's stream up to file_bytes, or one packet further (it
 * was killed between the write and advancing `consumed`): the packets of
 * the file are walked, and the salvage goes on after the last whole one,
 * by sequence number (= virtual page number). Complete pages are appended
 * as they are; the page the writer was on (or one that a nested event left
 * open) only if its committed bytes are a prefix of whole events, exactly
 * the committed count (ring_prefix_ok), with its context rebuilt in a copy.
 * Events in flight (nest) and whatever cannot be proved whole are counted
 * lost. Nothing in the file is trusted: the geometry is checked against
 * the file's size before any page is read.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"
#include "ring_fast.h"

bool ring_prefix_ok(const uint8_t *page, uint32_t end, uint64_t events)
{
	uint32_t p = RING_HDR_SIZE;
	uint64_t n = 0;
	while (p < end) {
		uint32_t id, hdr;
		uint64_t ts;
		if (fmt_header(page + p, end - p, &id, &ts, &hdr) < 0)
			return false;
		int64_t pl = fmt_payload_len(id, page + p + hdr, end - p - hdr);
		if (pl < 0)
			return false;
		p += hdr + (uint32_t)pl;
		n++;
	}
	return p == end && n == events;
}

int ring_proc_stat(pid_t pid, struct ring_proc *p)
{
	char path[40] = "/proc/self/stat", buf[1024];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -ENOENT : -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = n < 0 ? (errno == ESRCH ? -ENOENT : -errno) : 0;
	close(fd);
	if (err)
		return err;
	buf[n > 0 ? n : 0] = 0;
	/* "PID (comm) S ppid ...": comm may hold anything, ')' too; the
	 * fields after the last ')' are plain numbers: state is field 3,
	 * num_threads 20, starttime 22. */
	char *s = strrchr(buf, ')');
	if (!s || s[1] != ' ' || !s[2])
		return -EINVAL;
	p->state = s[2];
	p->threads = p->start = 0;
	s += 3;
	for (int field = 4; field <= 22; field++) {
		while (*s == ' ')
			s++;
		if (!*s)
			return -EINVAL;
		uint64_t v = 0;
		bool num = false;
		for (; *s >= '0' && *s <= '9'; s++, num = true)
			v = v * 10 + (uint64_t)(*s - '0');
		while (*s && *s != ' ')
			s++; /* a negative field (priority, nice) */
		if (field == 20)
			p->threads = v;
		else if (field == 22 && num)
			p->start = v;
	}
	return p->start ? 0 : -EINVAL;
}

/* One salvage: the buffer (read-only mapping) and the stream being appended. */
struct salv {
	const struct ring_buf *b;
	const uint8_t *data;
	const uint64_t *commit;
	const char *ctf_dir;
	int fd;		    /* the stream file; -1 until opened */
	uint64_t at;	    /* its size in whole packets: where the next one goes */
	uint64_t last_disc; /* events_discarded of its last packet */
	int err;	    /* a write failed: nothing more is written */
	struct ring_salvage *r;
};

/* Does the buffer file of SIZE bytes hold a buffer of this layout? */
static bool salv_geometry_ok(const struct ring_buf *b, size_t size)
{
	uint64_t ps = b->page_size, np = b->pages;
	if (__atomic_load_n(&b->shm_magic, __ATOMIC_ACQUIRE) != RING_SHM_MAGIC ||
	    b->map_size != size || ps < 4096 || ps > (1u << 30) || (ps & (ps - 1)) ||
	    b->page_shift != (uint32_t)__builtin_ctzll(ps) || np < 2 || np > (1u << 20) ||
	    (np & (np - 1)) || b->buf_mask != np * ps - 1 || b->ctl_size % 4096 ||
	    b->ctl_size < sizeof(*b) + np * sizeof(uint64_t) || b->ctl_size + np * ps != size)
		return false;
	return memchr(b->path, 0, sizeof(b->path)) && memchr(b->img, 0, sizeof(b->img));
}

static bool salv_pread(int fd, void *buf, size_t len, uint64_t at)
{
	return pread(fd, buf, len, (off_t)at) == (ssize_t)len;
}

/* All of P at offset AT of FD (async-signal-safe: the emergency flush
 * uses it too). */
bool ring_pwrite_all(int fd, const uint8_t *p, size_t len, uint64_t at)
{
	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
		at += (uint64_t)n;
	}
	return true;
}

/*
 * The stream the consumer had begun, if it is one of CTF_DIR's: keep its
 * whole packets (up to file_bytes, or one more) and note the last one's
 * sequence number in *SEQ (false: no packet). Returns false when there is
 * no such file (a new one is made at the first packet).
 */
static bool salv_reopen(struct salv *v, bool *have_seq, uint64_t *seq)
{
	const struct ring_buf *b = v->b;
	size_t dl = strlen(v->ctf_dir);
	*have_seq = false;
	if (!b->path[0] || strncmp(b->path, v->ctf_dir, dl) ||
	    strncmp(b->path + dl, "/stream-", 8) || strchr(b->path + dl + 1, '/'))
		return false;
	int fd = open(b->path, O_RDWR | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	uint64_t off = 0, size = (uint64_t)st.st_size;
	uint8_t hdr[RING_HDR_SIZE];
	while (off + RING_HDR_SIZE <= size && salv_pread(fd, hdr, sizeof(hdr), off)) {
		uint64_t bits = get_u64(hdr + PKT_PACKET_SIZE), len = bits / 8;
		uint32_t magic;
		memcpy(&magic, hdr + PKT_MAGIC, 4);
		if (magic != RING_MAGIC || bits % 8 || len < RING_HDR_SIZE || len > size - off ||
		    off + len > b->file_bytes + b->page_size)
			break;
		*have_seq = true;
		*seq = get_u64(hdr + PKT_SEQ);
		v->last_disc = get_u64(hdr + PKT_DISCARDED);
		off += len;
	}
	if (size > off && ftruncate(fd, (off_t)off)) {
		close(fd);
		return false;
	}
	v->fd = fd;
	v->at = off;
	return true;
}

/* A new stream file, named as the runtime would have: stream-IMG-TID[.N]. */
static int salv_create(struct salv *v)
{
	char path[PATH_MAX + 64];
	for (int i = 0; i < 1000; i++) {
		int n = i ? snprintf(path, sizeof(path), "%s/stream-%s-%d.%d", v->ctf_dir,
				     v->r->img, (int)v->b->tid, i)
			  : snprintf(path, sizeof(path), "%s/stream-%s-%d", v->ctf_dir, v->r->img,
				     (int)v->b->tid);
		if (n >= (int)sizeof(path))
			return -ENAMETOOLONG;
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			v->fd = fd;
			v->at = 0;
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Append one packet: PAGE's first LEN bytes, EVENTS events; a PARTIAL one
 * gets its closing context here (in a copy: the file is read-only). */
static void salv_packet(struct salv *v, const uint8_t *page, size_t len, uint64_t events,
			bool partial)
{
	const struct ring_buf *b = v->b;
	if (!v->err && v->fd < 0)
		v->err = salv_create(v);
	if (v->err) {
		v->r->lost += events;
		return;
	}
	uint8_t hdr[RING_HDR_SIZE];
	uint64_t disc;
	memcpy(hdr, page, RING_HDR_SIZE);
	if (partial) {
		/* The process's clock is CLOCK_MONOTONIC: now is after its last event. */
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		uint64_t now = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
		uint64_t begin = get_u64(hdr + PKT_TS_BEGIN);
		put_u64(hdr + PKT_TS_END, now > begin ? now : begin);
		put_u64(hdr + PKT_CONTENT_SIZE, (uint64_t)len * 8);
		put_u64(hdr + PKT_PACKET_SIZE, (uint64_t)len * 8);
		disc = b->lost;
	} else {
		disc = get_u64(hdr + PKT_DISCARDED);
	}
	disc += b->overwritten;
	if (disc < v->last_disc)
		disc = v->last_disc;
	put_u64(hdr + PKT_DISCARDED, disc);
	if (!ring_pwrite_all(v->fd, hdr, RING_HDR_SIZE, v->at) ||
	    !ring_pwrite_all(v->fd, page + RING_HDR_SIZE, len - RING_HDR_SIZE,
			     v->at + RING_HDR_SIZE)) {
		v->err = errno ? -errno : -EIO;
		if (ftruncate(v->fd, (off_t)v->at)) /* whole packets only */
			v->err = -EIO;
		v->r->lost += events;
		return;
	}
	v->at += len;
	v->last_disc = disc;
	v->r->events += events;
}

/* Events committed in page VP; CUR's word may still be the previous lap's
 * (a switch into CUR stopped before retiring it): those were overwritten. */
static uint64_t salv_events(const struct salv *v, uint64_t vp, uint64_t cur)
{
	uint64_t cw = v->commit[vp & (v->b->pages - 1)];
	if (vp == cur && (uint32_t)cw == v->b->page_size && !v->b->overwrite)
		return 0; /* no-overwrite: that lap was written already */
	return cw >> 32;
}

static void salv_run(struct salv *v)
{
	const struct ring_buf *b = v->b;
	const uint32_t ps = b->page_size;
	uint64_t nest = b->nest, off = b->offset, lost = 0, seq = 0;
	uint64_t cur = off >> b->page_shift, first = b->consumed;
	bool have_seq;
	v->last_disc = b->last_disc;
	if (cur + 1 > b->pages && first < cur + 1 - b->pages)
		first = cur + 1 - b->pages; /* overwrite mode: the oldest still there */
	if (!salv_reopen(v, &have_seq, &seq))
		v->fd = -1;
	else if (have_seq && seq >= first)
		first = seq + 1; /* written, consumed not advanced yet */
	for (uint64_t vp = first; vp <= cur; vp++) {
		const uint8_t *page = v->data + ((vp << b->page_shift) & b->buf_mask);
		uint64_t cw = v->commit[vp & (b->pages - 1)], ev = cw >> 32;
		uint32_t bytes = (uint32_t)cw;
		if (bytes == ps && vp < cur) { /* complete */
			uint64_t bits = get_u64(page + PKT_CONTENT_SIZE);
			if (bits % 8 == 0 && bits / 8 >= RING_HDR_SIZE && bits / 8 <= ps &&
			    get_u64(page + PKT_SEQ) == vp)
				salv_packet(v, page, bits / 8, ev, false);
			else
				lost += ev;
			continue;
		}
		if (bytes == ps) { /* CUR, the previous lap's word: nothing here yet */
			lost += salv_events(v, vp, cur);
			continue;
		}
		/* The writer's page, or one left open by an event in flight. */
		if (nest <= 1 && bytes > RING_HDR_SIZE && bytes < ps &&
		    get_u64(page + PKT_SEQ) == vp && ring_prefix_ok(page, bytes, ev))
			salv_packet(v, page, bytes, ev, true);
		else
			lost += ev;
		/* Nothing after a page left open can be proved whole. */
		for (vp++; vp <= cur; vp++)
			lost += salv_events(v, vp, cur);
	}
	v->r->lost += b->lost + b->overwritten + b->lost_consumer + lost + nest;
	v->r->overwritten += b->overwritten;
	if (v->fd >= 0)
		close(v->fd);
}

int ring_salvage(const char *path, const char *ctf_dir, struct ring_salvage *r)
{
	memset(r, 0, sizeof(*r));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(struct ring_buf)) {
		close(fd);
		return -EINVAL;
	}
	size_t size = (size_t)st.st_size;
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	const struct ring_buf *b = m;
	int err = 0;
	if (!salv_geometry_ok(b, size)) {
		err = -EINVAL;
	} else {
		r->pid = b->pid;
		r->tid = b->tid;
		/* a file name part: "PID" or "PID.K" only */
		if (b->img[0] && strspn(b->img, "0123456789.") == strlen(b->img))
			snprintf(r->img, sizeof(r->img), "%s", b->img);
		else
			snprintf(r->img, sizeof(r->img), "%d", (int)b->pid);
		r->flushed = b->lost_reported;
		if (!r->flushed) {
			struct salv v = {
			    .b = b,
			    .data = (const uint8_t *)m + b->ctl_size,
			    .commit = (const uint64_t *)(b + 1),
			    .ctf_dir = ctf_dir,
			    .fd = -1,
			    .r = r,
			};
			salv_run(&v);
			err = v.err;
		}
	}
	munmap(m, size);
	return err;
}
