/* SPDX-License-Identifier: MIT */
/*
 * pb.h - the protocol buffers wire format, written: varints, tags and
 * length-delimited fields into a growable buffer. A nested message is
 * opened with pb_open (its length takes one byte) and closed with
 * pb_close, which moves the message on when its length needs more bytes.
 * Out of memory is sticky (pb.oom): the caller checks once.
 */
#ifndef DYNFTRACE_PB_H
#define DYNFTRACE_PB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2 };

struct pb {
	uint8_t *b;
	size_t n, cap;
	int oom;
};

static inline int pb_room(struct pb *p, size_t more)
{
	if (p->oom)
		return 0;
	if (p->n + more > p->cap) {
		size_t cap = p->cap ? p->cap : 256;
		uint8_t *b;

		while (cap < p->n + more)
			cap *= 2;
		b = realloc(p->b, cap);
		if (!b) {
			p->oom = 1;
			return 0;
		}
		p->b = b;
		p->cap = cap;
	}
	return 1;
}

static inline size_t pb_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline void pb_varint(struct pb *p, uint64_t v)
{
	if (!pb_room(p, 10))
		return;
	while (v >= 0x80) {
		p->b[p->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->b[p->n++] = (uint8_t)v;
}

static inline void pb_tag(struct pb *p, unsigned field, unsigned wire)
{
	pb_varint(p, (uint64_t)field << 3 | wire);
}

/* uint32/uint64/enum/bool fields; int32/int64 pass their two's complement
 * (a negative one takes ten bytes, as the format says). */
static inline void pb_uint(struct pb *p, unsigned field, uint64_t v)
{
	pb_tag(p, field, PB_VARINT);
	pb_varint(p, v);
}

static inline void pb_bytes(struct pb *p, unsigned field, const void *d, size_t n)
{
	pb_tag(p, field, PB_LEN);
	pb_varint(p, n);
	if (pb_room(p, n)) {
		memcpy(p->b + p->n, d, n);
		p->n += n;
	}
}

static inline void pb_str(struct pb *p, unsigned field, const char *s)
{
	pb_bytes(p, field, s, strlen(s));
}

/* Open a nested message FIELD: returns where its body starts. */
static inline size_t pb_open(struct pb *p, unsigned field)
{
	pb_tag(p, field, PB_LEN);
	if (pb_room(p, 1))
		p->b[p->n++] = 0;
	return p->n;
}

/* Close the message whose body starts at START (from pb_open). */
static inline void pb_close(struct pb *p, size_t start)
{
	size_t len, extra;

	if (p->oom)
		return;
	len = p->n - start;
	extra = pb_varint_len(len) - 1;
	if (extra) {
		if (!pb_room(p, extra))
			return;
		memmove(p->b + start + extra, p->b + start, len);
		p->n += extra;
	}
	for (size_t i = start - 1;; i++) {
		p->b[i] = (uint8_t)(len | (len >= 0x80 ? 0x80 : 0));
		len >>= 7;
		if (!len)
			break;
	}
}

#endif
