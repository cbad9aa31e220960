/* SPDX-License-Identifier: MIT */
/*
 * ctf.c - the session's CTF 1.8 metadata (ctf/metadata): written whole by
 * the first process of a session, read back for its uuid by the others.
 * The event blocks come from format.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctf.h"
#include "format.h"
#include "ring_fast.h"

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

/* clang-format off */
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
    "\ttrace_format_version = " FMT_STR(FMT_VERSION) ";\n"
    "};\n"
    "\n"
    "clock {\n"
    "\tname = \"monotonic\";\n"
    "\tdescription = \"CLOCK_MONOTONIC; offset: CLOCK_REALTIME - CLOCK_MONOTONIC at the session's "
    "start\";\n"
    "\tfreq = 1000000000;\n"
    "\tprecision = 1;\n"
    "\toffset_s = %llu;\n"
    "\toffset = %llu;\n"
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
				      "\n" FMT_TSDL_VALUE FMT_TSDL_EVENTS;
/* clang-format on */

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

static int metadata_read_uuid(const char *path, uint8_t *trace_uuid)
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

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ns, read between two monotonic reads
 * (the closest pair of three), so that CTF readers show wall-clock times
 * that match the program's logs; the streams keep monotonic values. 0 if
 * the real-time clock is set before the boot. */
static uint64_t realtime_offset_ns(void)
{
	uint64_t best_gap = UINT64_MAX, off = 0;
	for (int i = 0; i < 3; i++) {
		struct timespec rt;
		uint64_t m0 = clock_mono_ns();
		if (clock_gettime(CLOCK_REALTIME, &rt))
			return 0;
		uint64_t m1 = clock_mono_ns();
		uint64_t r = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
		uint64_t mid = m0 + (m1 - m0) / 2;
		if (m1 - m0 < best_gap) {
			best_gap = m1 - m0;
			off = r > mid ? r - mid : 0;
		}
	}
	return off;
}

/* The first process of a session writes metadata (whole, then linked into
 * place so nobody reads half of it); the others read its uuid back. */
int ctf_metadata_init(const char *ctf_dir, uint8_t trace_uuid[16])
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 48];
	if (snprintf(path, sizeof(path), "%s/metadata", ctf_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, F_OK) == 0)
		return metadata_read_uuid(path, trace_uuid);
	if (getrandom(trace_uuid, 16, 0) != 16) {
		uint64_t a = clock_mono_ns() ^ ((uint64_t)getpid() << 32), b = clk_cycles();
		memcpy(trace_uuid, &a, 8);
		memcpy(trace_uuid + 8, &b, 8);
	}
	trace_uuid[6] = (uint8_t)((trace_uuid[6] & 0x0f) | 0x40);
	trace_uuid[8] = (uint8_t)((trace_uuid[8] & 0x3f) | 0x80);
	char us[40];
	uuid_str(trace_uuid, us);
	uint64_t off = realtime_offset_ns();
	static char text[sizeof(metadata_fmt) + 128];
	int len =
	    snprintf(text, sizeof(text), metadata_fmt, us, (unsigned long long)(off / 1000000000u),
		     (unsigned long long)(off % 1000000000u));
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
			err = metadata_read_uuid(path, trace_uuid);
		else if (err == -EPERM || err == -EOPNOTSUPP || err == -ENOSYS) {
			/* no hard links here: exclusive create instead */
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd < 0) {
				err =
				    errno == EEXIST ? metadata_read_uuid(path, trace_uuid) : -errno;
			} else {
				err = write_all(fd, text, (size_t)len);
				close(fd);
			}
		}
	}
	unlink(tmp);
	return err;
}
