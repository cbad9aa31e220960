/* SPDX-License-Identifier: MIT */
/*
 * format.h - the session's event format, defined once (docs/FORMAT.md).
 *
 * The writer (ring.c, ring_fast.h), the salvage of a dead process's
 * buffers (ring_salvage.c), the readers (cli/trace_stream.c, ring_read.c)
 * and the CTF metadata (ctf.c builds its event blocks from FMT_EVENTS,
 * the argument values' declaration from FMT_ARG_KINDS) all use these
 * definitions. The test suite keeps a decoder of its own, as an oracle.
 *
 * A stream is a sequence of packets (one buffer page each):
 *
 *   | packet header (24)          | packet context (56)                   |
 *   | magic uuid[16] stream_id    | ts_begin ts_end content_size          |
 *   |                             | packet_size discarded seq pid tid     |
 *   | events ...                                              | padding  |
 *
 * All integers little-endian. An event is a header and its payload:
 *   compact header (2 bytes): id in bits 0-2 (0..6), the low 13 bits of the
 *     timestamp in bits 3-15, for an event less than 8192 ns after the
 *     previous one of its packet;
 *   extended header (13 bytes): 7, id (uint32), timestamp (uint64 ns).
 * A function_graph call is an entry (4 bytes as entry16, 6 for a site id
 * above 16 bits) and an exit (2); a call of the function tracer a
 * function_near event (8) when its caller is near.
 *
 * FMT_VERSION (the metadata's trace_format_version) changes with the
 * events: 2 since entry16 took compact id 4 (`lost`, which the runtime
 * never wrote, moved to 13); 3 since exit_lost (14): COUNT open calls
 * returned while their exits could not be written (a full buffer), so
 * the reader closes them there. Readers refuse a newer version.
 */
#ifndef DYNFTRACE_FORMAT_H
#define DYNFTRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FMT_VERSION	   3
#define FMT_PACKET_MAGIC   0xC1FC1FC1u
#define FMT_PACKET_HEADER  24
#define FMT_PACKET_CONTEXT 56
#define FMT_HDR_SIZE	   (FMT_PACKET_HEADER + FMT_PACKET_CONTEXT) /* 80 */

/* Byte offsets in the packet header and context. */
enum {
	FMT_PKT_MAGIC = 0,
	FMT_PKT_UUID = 4,
	FMT_PKT_STREAM_ID = 20,
	FMT_PKT_TS_BEGIN = 24,
	FMT_PKT_TS_END = 32,
	FMT_PKT_CONTENT_SIZE = 40,
	FMT_PKT_PACKET_SIZE = 48,
	FMT_PKT_DISCARDED = 56,
	FMT_PKT_SEQ = 64,
	FMT_PKT_PID = 72,
	FMT_PKT_TID = 76,
};

#define FMT_COMPACT_HDR	   2
#define FMT_EXT_HDR	   13
#define FMT_EXT_TAG	   7 /* the 3-bit id of an extended header */
#define FMT_COMPACT_ID_MAX 6
#define FMT_TS_BITS	   13
#define FMT_TS_WRAP	   (1u << FMT_TS_BITS)

#define FMT_STR_(x) #x
#define FMT_STR(x)  FMT_STR_(x) /* a number above, for the CTF metadata */

/* Payload sizes: fixed, or variable (FMT_VAR, see fmt_payload_len). */
#define FMT_VAR (-1)

/*
 * function_near: a `function` event whose caller lies near the function
 * (the same object, as a rule): 48 bits, the site id in the low
 * FMT_NEAR_FUNC_BITS, then the parent ip minus the site's address (the
 * ADDR of sites-IMG.txt) as a signed FMT_NEAR_OFF_BITS integer. With its
 * compact header, 8 bytes. Anything that does not fit takes the 14-byte
 * `function` event.
 */
#define FMT_NEAR_FUNC_BITS 22
#define FMT_NEAR_OFF_BITS  26
#define FMT_NEAR_FUNC_MAX  ((1u << FMT_NEAR_FUNC_BITS) - 1)
#define FMT_NEAR_OFF_MIN   (-(INT64_C(1) << (FMT_NEAR_OFF_BITS - 1)))
#define FMT_NEAR_OFF_MAX   ((INT64_C(1) << (FMT_NEAR_OFF_BITS - 1)) - 1)
/* clang-format off */
#define FMT_NEAR_FIELDS \
	"integer { size = " FMT_STR(FMT_NEAR_FUNC_BITS) "; align = 1; signed = false; } func; " \
	"integer { size = " FMT_STR(FMT_NEAR_OFF_BITS) "; align = 1; signed = true; } parent_off;"
/* clang-format on */

/*
 * The events: X(name, CTF name, id, payload bytes, CTF fields). Ids above
 * FMT_COMPACT_ID_MAX always take the extended header. entry16 is the entry
 * of a site whose id fits 16 bits (the common case: 4 bytes, not 6); CTF
 * readers see both as `entry` with a `func` field.
 */
#define FMT_EVENTS(X)                                                                              \
	X(entry, entry, 0, 4, "uint32_t func;")                                                    \
	X(exit, exit, 1, 0, "")                                                                    \
	X(function, function, 2, 12, "uint32_t func; uint64_t parent_ip;")                         \
	X(call, call, 3, 12, "uint32_t func; uint64_t duration_ns;")                               \
	X(entry16, entry, 4, 2, "uint16_t func;")                                                  \
	X(marker, marker, 5, FMT_VAR, "string { encoding = UTF8; } text;")                         \
	X(function_near, function_near, 6, 6, FMT_NEAR_FIELDS)                                     \
	X(exit_depth, exit_depth, 8, 4, "uint32_t depth;")                                         \
	X(tracepoint, tracepoint, 9, FMT_VAR, "uint16_t tp; uint16_t len; uint8_t data[len];")     \
	X(entry_args, entry_args, 10, FMT_VAR,                                                     \
	  "uint32_t func; uint16_t len; uint8_t n; struct dft_value args[n];")                     \
	X(exit_retval, exit_retval, 11, FMT_VAR,                                                   \
	  "uint16_t len; uint8_t n; struct dft_value retval[n];")                                  \
	X(ctx_switch, ctx_switch, 12, 12, "uint32_t depth; uint32_t from; uint32_t to;")           \
	X(lost, lost, 13, 4, "uint32_t count;")                                                    \
	X(exit_lost, exit_lost, 14, 4, "uint32_t count;")

/* The largest site id an entry16 event holds. */
#define FMT_ENTRY16_MAX 0xffffu

#define FMT_ID_(name, ctf, id, size, fields) FMT_EV_ID_##name = id,
enum { FMT_EVENTS(FMT_ID_) };
#undef FMT_ID_
#define FMT_EV_ENTRY	     FMT_EV_ID_entry
#define FMT_EV_ENTRY16	     FMT_EV_ID_entry16
#define FMT_EV_EXIT	     FMT_EV_ID_exit
#define FMT_EV_FUNCTION	     FMT_EV_ID_function
#define FMT_EV_CALL	     FMT_EV_ID_call
#define FMT_EV_LOST	     FMT_EV_ID_lost
#define FMT_EV_MARKER	     FMT_EV_ID_marker
#define FMT_EV_FUNCTION_NEAR FMT_EV_ID_function_near
#define FMT_EV_EXIT_DEPTH    FMT_EV_ID_exit_depth
#define FMT_EV_TRACEPOINT    FMT_EV_ID_tracepoint
#define FMT_EV_CTX_SWITCH    FMT_EV_ID_ctx_switch
#define FMT_EV_ENTRY_ARGS    FMT_EV_ID_entry_args
#define FMT_EV_EXIT_RETVAL   FMT_EV_ID_exit_retval
#define FMT_EV_EXIT_LOST     FMT_EV_ID_exit_lost

/* The CTF event blocks of the metadata, one string. */
#define FMT_TSDL_(name, ctf, id, size, fields)                                                     \
	"event {\n\tname = \"" #ctf "\";\n\tid = " #id ";\n\tstream_id = 0;\n"                     \
	"\tfields := struct { " fields " };\n};\n\n"
#define FMT_TSDL_EVENTS FMT_EVENTS(FMT_TSDL_)

/* Fixed payload size of event ID, FMT_VAR, or -2 for an unknown id. */
static inline int fmt_payload_fixed(uint32_t id)
{
#define FMT_SIZE_(name, ctf, i, size, fields)                                                      \
	case i:                                                                                    \
		return size;
	switch (id) {
		FMT_EVENTS(FMT_SIZE_)
	default:
		return -2;
	}
#undef FMT_SIZE_
}

/*
 * The event header at P (AVAIL bytes): its id, its length and, for an
 * extended header, the full timestamp (*TS; a compact one leaves the low
 * 13 bits there). -1 if it does not fit or is malformed.
 */
static inline int fmt_header(const uint8_t *p, size_t avail, uint32_t *id, uint64_t *ts,
			     uint32_t *hdr)
{
	if (avail < FMT_COMPACT_HDR)
		return -1;
	if ((p[0] & 7) == FMT_EXT_TAG) {
		if (p[0] != FMT_EXT_TAG || avail < FMT_EXT_HDR)
			return -1;
		memcpy(id, p + 1, 4);
		memcpy(ts, p + 5, 8);
		*hdr = FMT_EXT_HDR;
	} else {
		uint16_t h;
		memcpy(&h, p, 2);
		*id = h & 7;
		*ts = h >> 3;
		*hdr = FMT_COMPACT_HDR;
	}
	return 0;
}

/* The payload of a function_near event of site FUNC at address SITE called
 * from PARENT, in the low 48 bits; false if it does not fit (the writer then
 * takes a `function` event). */
static inline bool fmt_near_pack(uint32_t func, uint64_t site, uint64_t parent, uint64_t *payload)
{
	int64_t off = (int64_t)(parent - site);
	if (func > FMT_NEAR_FUNC_MAX || off < FMT_NEAR_OFF_MIN || off > FMT_NEAR_OFF_MAX)
		return false;
	*payload = (uint64_t)func | (((uint64_t)off & ((UINT64_C(1) << FMT_NEAR_OFF_BITS) - 1))
				     << FMT_NEAR_FUNC_BITS);
	return true;
}

/* The site id and the parent's offset from the site's address in the 6-byte
 * function_near payload at P. */
static inline void fmt_near_unpack(const uint8_t *p, uint32_t *func, int64_t *off)
{
	uint64_t v = 0;
	memcpy(&v, p, 6);
	*func = (uint32_t)(v & FMT_NEAR_FUNC_MAX);
	/* sign-extend the top FMT_NEAR_OFF_BITS of the 48 */
	*off = (int64_t)(v << (64 - FMT_NEAR_FUNC_BITS - FMT_NEAR_OFF_BITS)) >>
	       (64 - FMT_NEAR_OFF_BITS);
}

/* Payload length of event ID whose payload starts at P (AVAIL bytes), or
 * -1 if it is unknown or runs past AVAIL. */
static inline int64_t fmt_payload_len(uint32_t id, const uint8_t *p, size_t avail)
{
	int fixed = fmt_payload_fixed(id);
	size_t n;
	if (fixed >= 0) {
		n = (size_t)fixed;
	} else if (id == FMT_EV_MARKER) {
		const uint8_t *z = memchr(p, 0, avail);
		if (!z)
			return -1;
		n = (size_t)(z - p) + 1;
	} else if (id == FMT_EV_TRACEPOINT || id == FMT_EV_ENTRY_ARGS) {
		uint16_t len;
		if (avail < 6 - 2 * (id == FMT_EV_TRACEPOINT))
			return -1;
		memcpy(&len, p + 2 + 2 * (id == FMT_EV_ENTRY_ARGS), 2);
		n = 4u + 2 * (id == FMT_EV_ENTRY_ARGS) + len;
	} else if (id == FMT_EV_EXIT_RETVAL) {
		uint16_t len;
		if (avail < 2)
			return -1;
		memcpy(&len, p, 2);
		n = 2u + len;
	} else {
		return -1;
	}
	return n <= avail ? (int64_t)n : -1;
}

/*
 * The values of entry_args and exit_retval: `len` counts the bytes after
 * it, `uint8 n` then n items (CTF: a sequence of struct dft_value), each
 *   uint8 kind (FMT_ARG_KINDS: the format letter and size in one);
 *   uint8 slot: N (1..8) for argN, FMT_SLOT_FP | N for fpargN, 0 the
 *        return value (CTF: bit fields `slot` (7) and `fp` (1));
 *   the value, laid out by kind (the CTF type in FMT_ARG_KINDS):
 *     integers, floats: their size in bytes; c: 1 byte;
 *     e32: int32, then the enum's name NUL-terminated (1..32 bytes);
 *     str, str_cut: the bytes NUL-terminated (at most FMT_ARG_STR_MAX
 *        before the NUL; str_cut: the string was longer);
 *     str_null: nothing; str_bad, str_unread: uint64 the pointer.
 * The count lets a CTF reader walk the items (TSDL has no "until len");
 * len lets the native readers skip an event without decoding it.
 */
#define FMT_SLOT_FP	 0x80
#define FMT_STR_OK	 0 /* the whole string */
#define FMT_STR_CUT	 1 /* its first bytes (it was longer) */
#define FMT_STR_NULL	 2
#define FMT_STR_BAD	 3  /* a pointer that could not be read */
#define FMT_STR_UNREAD	 4  /* not read: the process may not read its memory so */
#define FMT_ARG_STR_MAX	 64 /* bytes of a string kept (the writer's bound) */
#define FMT_ARG_ENUM_MAX 32 /* bytes of an enum's name */
#define FMT_ARGS_MAX	 8  /* values in one event */

/* clang-format off */
#define FMT_TSDL_INT(bits, sgn, base) \
	"integer { size = " #bits "; align = 8; signed = " #sgn "; base = " #base "; }"
#define FMT_TSDL_STR "string { encoding = UTF8; }"
/*
 * The item kinds: X(name, code, fmt letter, size, string state, CTF type).
 * The name is the CTF enum's label and the variant's field; d (uftrace's
 * default) is a signed integer, x and p are shown in hexadecimal.
 */
#define FMT_ARG_KINDS(X) \
	X(d8, 0, 'd', 1, 0, FMT_TSDL_INT(8, true, 10)) \
	X(d16, 1, 'd', 2, 0, FMT_TSDL_INT(16, true, 10)) \
	X(d32, 2, 'd', 4, 0, FMT_TSDL_INT(32, true, 10)) \
	X(d64, 3, 'd', 8, 0, FMT_TSDL_INT(64, true, 10)) \
	X(i8, 4, 'i', 1, 0, FMT_TSDL_INT(8, true, 10)) \
	X(i16, 5, 'i', 2, 0, FMT_TSDL_INT(16, true, 10)) \
	X(i32, 6, 'i', 4, 0, FMT_TSDL_INT(32, true, 10)) \
	X(i64, 7, 'i', 8, 0, FMT_TSDL_INT(64, true, 10)) \
	X(u8, 8, 'u', 1, 0, FMT_TSDL_INT(8, false, 10)) \
	X(u16, 9, 'u', 2, 0, FMT_TSDL_INT(16, false, 10)) \
	X(u32, 10, 'u', 4, 0, FMT_TSDL_INT(32, false, 10)) \
	X(u64, 11, 'u', 8, 0, FMT_TSDL_INT(64, false, 10)) \
	X(x8, 12, 'x', 1, 0, FMT_TSDL_INT(8, false, 16)) \
	X(x16, 13, 'x', 2, 0, FMT_TSDL_INT(16, false, 16)) \
	X(x32, 14, 'x', 4, 0, FMT_TSDL_INT(32, false, 16)) \
	X(x64, 15, 'x', 8, 0, FMT_TSDL_INT(64, false, 16)) \
	X(p64, 16, 'p', 8, 0, FMT_TSDL_INT(64, false, 16)) \
	X(c, 17, 'c', 1, 0, "integer { size = 8; align = 8; signed = false; encoding = ASCII; }") \
	X(f32, 18, 'f', 4, 0, "floating_point { exp_dig = 8; mant_dig = 24; align = 8; }") \
	X(f64, 19, 'f', 8, 0, "floating_point { exp_dig = 11; mant_dig = 53; align = 8; }") \
	X(e32, 20, 'e', 4, 0, "struct { " FMT_TSDL_INT(32, true, 10) " value; " \
			      FMT_TSDL_STR " type; }") \
	X(str, 21, 's', 8, FMT_STR_OK, FMT_TSDL_STR) \
	X(str_cut, 22, 's', 8, FMT_STR_CUT, FMT_TSDL_STR) \
	X(str_null, 23, 's', 8, FMT_STR_NULL, "struct { }") \
	X(str_bad, 24, 's', 8, FMT_STR_BAD, FMT_TSDL_INT(64, false, 16)) \
	X(str_unread, 25, 's', 8, FMT_STR_UNREAD, FMT_TSDL_INT(64, false, 16))

#define FMT_TSDL_LABEL_(name, code, fmt, size, state, type) #name " = " #code ", "
#define FMT_TSDL_OPTION_(name, code, fmt, size, state, type) "\t\t" type " " #name ";\n"
/* The CTF declaration of an item, for the metadata (before the events). */
#define FMT_TSDL_VALUE \
	"struct dft_value {\n" \
	"\tenum : integer { size = 8; align = 8; signed = false; } {\n\t\t" \
	FMT_ARG_KINDS(FMT_TSDL_LABEL_) "\n\t} kind;\n" \
	"\tinteger { size = 7; align = 1; signed = false; } slot;\n" \
	"\tinteger { size = 1; align = 1; signed = false; } fp;\n" \
	"\tvariant <kind> {\n" FMT_ARG_KINDS(FMT_TSDL_OPTION_) "\t} v;\n" \
	"};\n\n"
/* clang-format on */

#define FMT_K_(name, code, fmt, size, state, type) FMT_ARG_##name = code,
enum { FMT_ARG_KINDS(FMT_K_) };
#undef FMT_K_

/* The kind of an item of format letter FMT, SIZE bytes and, for a string,
 * STATE; -1 if there is none. */
static inline int fmt_arg_kind(char fmt, unsigned size, unsigned state)
{
#define FMT_KEY(fmt, size, state) ((unsigned)(unsigned char)(fmt) << 8 | (size) << 3 | (state))
#define FMT_K_(name, code, fmt, size, state, type)                                                 \
	case FMT_KEY(fmt, size, state):                                                            \
		return code;
	if (size > 8 || state > 7)
		return -1;
	switch (FMT_KEY(fmt, size, state)) {
		FMT_ARG_KINDS(FMT_K_)
	default:
		return -1;
	}
#undef FMT_K_
#undef FMT_KEY
}

/* One item of an args payload, decoded by fmt_arg_next. */
struct fmt_arg {
	char fmt;	   /* d i u x p c f e s */
	uint8_t slot;	   /* see above */
	uint8_t size;	   /* bytes of the value (integers, floats, enums) */
	uint64_t bits;	   /* the value's bytes, zero-extended; s: BAD/UNREAD pointer */
	uint8_t str_state; /* s: FMT_STR_* */
	const char *str;   /* s: OK/CUT bytes; e: the enum's name (len bytes, then a NUL) */
	uint8_t len;	   /* s: bytes at str; e: name length */
};

/* A NUL-terminated text of 1 (NONEMPTY) or 0 to MAX bytes at P in
 * [P, END): its length, or -1. */
static inline int fmt_arg_text(const uint8_t *p, const uint8_t *end, size_t max, int nonempty)
{
	size_t room = (size_t)(end - p);
	const uint8_t *z = memchr(p, 0, room < max + 1 ? room : max + 1);
	if (!z || (nonempty && z == p))
		return -1;
	return (int)(z - p);
}

/* Decode the item at *P in [*P, END): 1 and *P moved past it, 0 at END,
 * -1 for a malformed item (unknown kind or slot, runs past END). */
static inline int fmt_arg_next(const uint8_t **pp, const uint8_t *end, struct fmt_arg *a)
{
	const uint8_t *p = *pp;
	int n;
	if (p == end)
		return 0;
	if (end - p < 2)
		return -1;
	memset(a, 0, sizeof(*a));
	switch (p[0]) {
#define FMT_K_(name, code, f, sz, state, type)                                                     \
	case code:                                                                                 \
		a->fmt = f;                                                                        \
		a->size = sz;                                                                      \
		a->str_state = state;                                                              \
		break;
		FMT_ARG_KINDS(FMT_K_)
#undef FMT_K_
	default:
		return -1;
	}
	a->slot = p[1];
	if ((a->slot & ~FMT_SLOT_FP) > FMT_ARGS_MAX || a->slot == FMT_SLOT_FP)
		return -1;
	p += 2;
	if (a->fmt == 's') {
		a->size = 0;
		if (a->str_state == FMT_STR_OK || a->str_state == FMT_STR_CUT) {
			if ((n = fmt_arg_text(p, end, FMT_ARG_STR_MAX, 0)) < 0)
				return -1;
			a->len = (uint8_t)n;
			a->str = (const char *)p;
			p += n + 1;
		} else if (a->str_state != FMT_STR_NULL) {
			if (end - p < 8)
				return -1;
			memcpy(&a->bits, p, 8);
			p += 8;
		}
	} else {
		if (end - p < a->size)
			return -1;
		memcpy(&a->bits, p, a->size); /* little-endian hosts only, as the rest */
		p += a->size;
		if (a->fmt == 'e') {
			if ((n = fmt_arg_text(p, end, FMT_ARG_ENUM_MAX, 1)) < 0)
				return -1;
			a->len = (uint8_t)n;
			a->str = (const char *)p;
			p += n + 1;
		}
	}
	*pp = p;
	return 1;
}

/* The items of the values DATA (LEN bytes, after the event's len): the
 * first at *P, their count; -1 (*P at the end) without a count or with
 * more than FMT_ARGS_MAX. */
static inline int fmt_args_items(const uint8_t *data, size_t len, const uint8_t **p)
{
	*p = data + len;
	if (len < 1 || data[0] > FMT_ARGS_MAX)
		return -1;
	*p = data + 1;
	return data[0];
}

/* Are the values DATA (LEN bytes) well formed: a count, that many items,
 * each decodable, and nothing after them? */
static inline bool fmt_args_valid(const uint8_t *data, size_t len)
{
	const uint8_t *p, *end = data + len;
	struct fmt_arg a;
	int n = fmt_args_items(data, len, &p);
	if (n < 0)
		return false;
	for (int i = 0; i < n; i++)
		if (fmt_arg_next(&p, end, &a) <= 0)
			return false;
	return p == end;
}

#endif
