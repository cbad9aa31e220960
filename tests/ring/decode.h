/* SPDX-License-Identifier: MIT */
/*
 * decode.h - a strict, independent decoder of dynftrace CTF streams
 * (docs/FORMAT.md) for the ring buffer tests. Checks every packet and event
 * and stops at the first problem with a message naming the file and offset.
 */
#ifndef DYNFTRACE_TEST_DECODE_H
#define DYNFTRACE_TEST_DECODE_H
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEC_MAGIC 0xC1FC1FC1u
#define DEC_HDR	  80

struct dec_event {
	uint64_t ts;
	unsigned id;	  /* an entry16 is an entry (0) here */
	unsigned raw_id;  /* the id as written */
	uint32_t func;	  /* entry (entry16 too: id 0) function call lost(count) exit_depth(depth)
			     ctx_switch(depth) */
	uint64_t u64;	  /* function: parent_ip; call: duration_ns;
			     function_near (6): the parent's signed offset from
			     the site's address, as a two's complement;
			     ctx_switch: from | to << 32 */
	const char *text; /* marker */
	int compact;	  /* header kind */
};

struct dec_stream {
	int pid, tid;
	uint64_t events, packets, bytes;
	uint64_t discarded; /* events_discarded of the last packet */
	uint64_t first_seq;
	uint64_t first_discarded;
	uint64_t first_ts, last_ts;
	uint64_t compact, extended;
	char err[512]; /* empty: valid */
};

typedef void (*dec_cb)(const struct dec_event *ev, void *arg);

static inline uint32_t dec_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}
static inline uint64_t dec_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

__attribute__((format(printf, 4, 5))) static inline int
dec_fail(struct dec_stream *st, const char *path, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n =
	    snprintf(st->err, sizeof(st->err), "%s: offset %llu: ", path, (unsigned long long)off);
	va_start(ap, fmt);
	vsnprintf(st->err + n, sizeof(st->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Reads the trace uuid from DIR/metadata. */
static inline int dec_metadata_uuid(const char *ctf, uint8_t *uuid)
{
	char path[4200], buf[8192];
	snprintf(path, sizeof(path), "%s/metadata", ctf);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *u = strstr(buf, "uuid = \"");
	if (!u)
		return -1;
	u += 8;
	int k = 0;
	for (int i = 0; k < 16 && u[i] && u[i] != '"'; i++) {
		if (u[i] == '-')
			continue;
		unsigned v;
		if (sscanf(u + i, "%2x", &v) != 1)
			return -1;
		uuid[k++] = (uint8_t)v;
		i++;
	}
	return k == 16 ? 0 : -1;
}

static inline int dec_payload_size(unsigned id, const uint8_t *p, const uint8_t *end)
{
	switch (id) {
	case 0:
	case 8:
	case 13:
		return 4;
	case 4: /* entry16 */
		return 2;
	case 1:
		return 0;
	case 2:
	case 3:
	case 12:
		return 12;
	case 6:
		return 6;
	case 5: {
		const uint8_t *z = memchr(p, 0, (size_t)(end - p));
		return z ? (int)(z - p) + 1 : -1;
	}
	case 10: /* entry_args: func, uint16 len, the values (count, items) */
	case 11: /* exit_retval: uint16 len, the value (count, item) */
	{
		int at = id == 10 ? 4 : 0;
		if (end - p < at + 2)
			return -1;
		int n = at + 2 + (p[at] | p[at + 1] << 8);
		return n <= end - p ? n : -1;
	}
	default:
		return -1;
	}
}

/* Decodes one stream file; 0 when it is valid. */
static inline int dec_file(const char *path, const uint8_t *uuid, struct dec_stream *st, dec_cb cb,
			   void *arg)
{
	memset(st, 0, sizeof(*st));
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return dec_fail(st, path, 0, "cannot open: %s", strerror(errno));
	struct stat sb;
	fstat(fd, &sb);
	size_t size = (size_t)sb.st_size;
	uint8_t *buf = malloc(size + 1);
	size_t got = 0;
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != size) {
		free(buf);
		return dec_fail(st, path, got, "short read");
	}
	st->bytes = size;
	uint64_t off = 0, prev_ts = 0, prev_seq = 0, prev_end = 0;
	int rc = 0;
	while (off < size) {
		const uint8_t *pk = buf + off;
		if (size - off < DEC_HDR) {
			rc = dec_fail(st, path, off, "truncated packet header (%zu bytes)",
				      (size_t)(size - off));
			break;
		}
		if (dec_u32(pk) != DEC_MAGIC) {
			rc = dec_fail(st, path, off, "bad magic %#x", dec_u32(pk));
			break;
		}
		if (uuid && memcmp(pk + 4, uuid, 16)) {
			rc = dec_fail(st, path, off + 4, "uuid differs from metadata");
			break;
		}
		if (dec_u32(pk + 20) != 0) {
			rc = dec_fail(st, path, off + 20, "stream_id %u", dec_u32(pk + 20));
			break;
		}
		uint64_t tb = dec_u64(pk + 24), te = dec_u64(pk + 32);
		uint64_t content = dec_u64(pk + 40), psize = dec_u64(pk + 48);
		uint64_t disc = dec_u64(pk + 56), seq = dec_u64(pk + 64);
		int pid = (int)dec_u32(pk + 72), tid = (int)dec_u32(pk + 76);
		if (content % 8 || psize % 8 || content > psize || content / 8 < DEC_HDR ||
		    psize / 8 > size - off) {
			rc = dec_fail(
			    st, path, off + 40,
			    "bad sizes: content %llu bits, packet %llu bits, %llu bytes left",
			    (unsigned long long)content, (unsigned long long)psize,
			    (unsigned long long)(size - off));
			break;
		}
		if (tb > te) {
			rc = dec_fail(st, path, off + 24, "timestamp_begin %llu > end %llu",
				      (unsigned long long)tb, (unsigned long long)te);
			break;
		}
		if (st->packets) {
			if (seq != prev_seq + 1) {
				rc =
				    dec_fail(st, path, off + 64, "packet_seq_num %llu after %llu",
					     (unsigned long long)seq, (unsigned long long)prev_seq);
				break;
			}
			if (disc < st->discarded) {
				rc = dec_fail(st, path, off + 56, "events_discarded went down");
				break;
			}
			if (pid != st->pid || tid != st->tid) {
				rc = dec_fail(st, path, off + 72, "pid/tid changed");
				break;
			}
			if (tb < prev_end) {
				rc = dec_fail(st, path, off + 24,
					      "packet begins before the previous ends");
				break;
			}
		} else {
			st->first_seq = seq;
			st->first_discarded = disc;
			st->pid = pid;
			st->tid = tid;
		}
		prev_seq = seq;
		prev_end = te;
		st->discarded = disc;
		st->packets++;
		uint64_t clock = tb;
		const uint8_t *p = pk + DEC_HDR, *end = pk + content / 8;
		while (p < end) {
			struct dec_event ev = {0};
			uint64_t eoff = off + (uint64_t)(p - pk);
			if (end - p < 2) {
				rc = dec_fail(st, path, eoff, "truncated event header");
				break;
			}
			unsigned id = p[0] & 7;
			if (id == 7) {
				if (end - p < 13) {
					rc = dec_fail(st, path, eoff, "truncated extended header");
					break;
				}
				if (p[0] != 7) {
					rc = dec_fail(st, path, eoff, "padding bits set in header");
					break;
				}
				id = dec_u32(p + 1);
				ev.ts = dec_u64(p + 5);
				p += 13;
				st->extended++;
			} else {
				uint16_t h;
				memcpy(&h, p, 2);
				uint64_t low = h >> 3;
				ev.ts = (clock & ~(uint64_t)0x1fff) | low;
				if (ev.ts < clock)
					ev.ts += 0x2000;
				ev.compact = 1;
				p += 2;
				st->compact++;
				if (id == 7 || id > 6) {
					rc = dec_fail(st, path, eoff, "bad compact id");
					break;
				}
			}
			int ps = dec_payload_size(id, p, end);
			if (ps < 0 || ps > end - p) {
				rc = dec_fail(st, path, eoff,
					      "event id %u: bad or truncated payload", id);
				break;
			}
			if (ev.ts < clock || ev.ts < prev_ts) {
				rc = dec_fail(
				    st, path, eoff, "timestamp %llu goes back (previous %llu)",
				    (unsigned long long)ev.ts,
				    (unsigned long long)(clock > prev_ts ? clock : prev_ts));
				break;
			}
			if (ev.ts > te) {
				rc =
				    dec_fail(st, path, eoff, "timestamp %llu after packet end %llu",
					     (unsigned long long)ev.ts, (unsigned long long)te);
				break;
			}
			ev.id = ev.raw_id = id;
			if (id == 0 || id == 13 || id == 8 || id == 2 || id == 3)
				ev.func = dec_u32(p);
			if (id == 4) { /* entry16: an entry with a 16-bit id */
				ev.func = (uint32_t)p[0] | (uint32_t)p[1] << 8;
				ev.id = 0;
			}
			if (id == 2 || id == 3)
				ev.u64 = dec_u64(p + 4);
			if (id == 12) { /* ctx_switch: depth; from, to */
				ev.func = dec_u32(p);
				ev.u64 = dec_u64(p + 4);
			}
			if (id == 5)
				ev.text = (const char *)p;
			if (id == 6) { /* 22-bit func, then a 26-bit signed offset */
				uint64_t w = (uint64_t)p[0] | (uint64_t)p[1] << 8 |
					     (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
					     (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40;
				ev.func = (uint32_t)(w % (1u << 22));
				uint64_t o = w >> 22; /* 26 bits */
				ev.u64 = o >= (1u << 25) ? o - (UINT64_C(1) << 26) : o;
			}
			p += ps;
			clock = prev_ts = ev.ts;
			if (!st->events)
				st->first_ts = ev.ts;
			st->last_ts = ev.ts;
			st->events++;
			if (cb)
				cb(&ev, arg);
		}
		if (rc)
			break;
		off += psize / 8;
	}
	free(buf);
	return rc;
}
#endif
