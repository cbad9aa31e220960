// SPDX-License-Identifier: MIT
/*
 * mkstream.c - test-only writer of session directories (docs/FORMAT.md), so
 * the reader can be tested, and the fuzzer seeded, without the runtime.
 *
 *   mkstream DIR < SCRIPT
 *
 * writes DIR/info, DIR/ctf/metadata, DIR/sites-PID.txt, DIR/maps-PID.txt and
 * DIR/ctf/stream-PID-TID from a script of lines (times in ns, absolute):
 *
 *   info TEXT                  a line of DIR/info (after "version: 1")
 *   noversion                  do not write the version line
 *   site PID ID ADDR SIZE NAME [OBJECT]    a line of sites-PID.txt
 *   map PID START END BIAS PATH            a line of maps-PID.txt
 *   page BYTES                 packet size from the next packet (default 4096)
 *   stream PID TID             start ctf/stream-PID-TID (ends the previous)
 *   packet                     end the current packet
 *   discarded N                events_discarded of the next packet
 *   seq N                      packet_seq_num of the next packet
 *   entry TS FUNC [ext]        events; "ext" forces the extended header
 *   exit TS [ext]
 *   entry16 TS FUNC            an entry whose id fits 16 bits (4 bytes)
 *   function TS FUNC PARENT_IP
 *   call TS FUNC DURATION
 *   lost TS COUNT
 *   marker TS TEXT...
 *   exit_depth TS N
 *   exit_lost TS N
 *   ctx_switch TS DEPTH FROM TO
 *   entry_args TS FUNC HEX...  an entry with values: the bytes after len in
 *                              hex (format.h: the count, then the items)
 *   exit_retval TS HEX...      an exit with a return value (the same)
 *   raw HEX...                 bytes appended to the packet's content
 *
 * A packet is ended automatically when the next event does not fit. The
 * compact header is used when the gap to the previous event is below 8192 ns
 * and the id is at most 6, as the runtime's writer does. Test helper: it
 * trusts its input and exits 1 on any problem.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../lib/ring/format.h" /* FMT_TSDL_VALUE */

#define MAGIC 0xC1FC1FC1u
#define HDR   80

static const uint8_t uuid[16] = {0x6d, 0x6b, 0x73, 0x74, 0x72, 0x65, 0x61, 0x6d,
				 0x2d, 0x75, 0x75, 0x69, 0x64, 0x2d, 0x30, 0x31};

static const char *dir;
static FILE *out; /* current stream file */
static unsigned pid, tid;
static size_t page = 4096, pkt_page;
static uint8_t *pkt; /* current packet, NULL when none is open */
static size_t used;
static uint64_t ts_begin, ts_end, prev_ts, discarded, seq, next_seq;
static int have_prev, have_events, seq_set;

static void die(const char *what)
{
	fprintf(stderr, "mkstream: %s\n", what);
	exit(1);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void end_packet(void)
{
	if (!pkt)
		return;
	put32(pkt, MAGIC);
	memcpy(pkt + 4, uuid, 16);
	put32(pkt + 20, 0);
	put64(pkt + 24, ts_begin);
	put64(pkt + 32, ts_end);
	put64(pkt + 40, (uint64_t)used * 8);
	put64(pkt + 48, (uint64_t)pkt_page * 8);
	put64(pkt + 56, discarded);
	put64(pkt + 64, seq);
	put32(pkt + 72, pid);
	put32(pkt + 76, tid);
	if (fwrite(pkt, 1, pkt_page, out) != pkt_page)
		die("write failed");
	free(pkt);
	pkt = NULL;
	next_seq = seq + 1;
}

static void begin_packet(void)
{
	pkt_page = page;
	pkt = calloc(1, pkt_page);
	if (!pkt)
		die("out of memory");
	used = HDR;
	have_events = 0;
	ts_begin = ts_end = prev_ts;
	seq = seq_set ? seq : next_seq;
	seq_set = 0;
}

/* Reserve N bytes for an event at TS with id ID; returns where it goes. */
static uint8_t *reserve(unsigned id, uint64_t ts, size_t payload, int ext)
{
	size_t n;
	uint8_t *p;

	if (!out)
		die("event before 'stream'");
	if (have_prev && ts < prev_ts)
		die("times must not go backwards");
	for (int pass = 0; pass < 2; pass++) {
		if (!pkt)
			begin_packet();
		if (!have_events)
			ts_begin = ts; /* the first event of a packet gives its begin time */
		ext = ext || id > 6 || ts - (have_events ? prev_ts : ts_begin) >= 8192;
		n = (ext ? 13 : 2) + payload;
		if (used + n <= pkt_page)
			break;
		if (pass)
			die("event larger than a page");
		end_packet();
	}
	p = pkt + used;
	if (ext) {
		p[0] = 7;
		put32(p + 1, id);
		put64(p + 5, ts);
		p += 13;
	} else {
		uint16_t v = (uint16_t)(id | (ts & 8191) << 3);

		p[0] = (uint8_t)v;
		p[1] = (uint8_t)(v >> 8);
		p += 2;
	}
	used += n;
	prev_ts = ts_end = ts;
	have_prev = have_events = 1;
	return p;
}

static void end_stream(void)
{
	end_packet();
	if (out && fclose(out))
		die("close failed");
	out = NULL;
}

static void write_metadata(void)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ctf/metadata", dir);
	f = fopen(path, "w");
	if (!f)
		die("cannot create ctf/metadata");
	fprintf(f, "/* CTF 1.8 */\n\n");
	fprintf(f, "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n");
	fprintf(f, "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n");
	fprintf(f, "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n");
	fprintf(f, "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n\n");
	fprintf(f, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"");
	for (int i = 0; i < 16; i++)
		fprintf(f, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", uuid[i]);
	fprintf(f, "\";\n\tbyte_order = le;\n\tpacket.header := struct {\n"
		   "\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n\t\tuint32_t stream_id;\n"
		   "\t};\n};\n\n");
	fprintf(f, "clock {\n\tname = \"monotonic\";\n\tfreq = 1000000000;\n\toffset = 0;\n};\n\n");
	fprintf(f, "typealias integer { size = 64; align = 8; signed = false;"
		   " map = clock.monotonic.value; } := uint64_clock_t;\n");
	fprintf(f, "typealias integer { size = 13; align = 1; signed = false;"
		   " map = clock.monotonic.value; } := uint13_clock_t;\n\n");
	fprintf(f, "stream {\n\tid = 0;\n\tpacket.context := struct {\n"
		   "\t\tuint64_clock_t timestamp_begin;\n\t\tuint64_clock_t timestamp_end;\n"
		   "\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n"
		   "\t\tuint64_t events_discarded;\n\t\tuint64_t packet_seq_num;\n"
		   "\t\tuint32_t pid;\n\t\tuint32_t tid;\n\t};\n"
		   "\tevent.header := struct {\n"
		   "\t\tenum : integer { size = 3; align = 8; signed = false; }"
		   " { compact = 0 ... 6, extended = 7 } id;\n"
		   "\t\tvariant <id> {\n\t\t\tstruct { uint13_clock_t timestamp; } compact;\n"
		   "\t\t\tstruct { uint32_t id; uint64_clock_t timestamp; } extended;\n"
		   "\t\t} v;\n\t};\n};\n\n");
	fprintf(f, "event { name = \"entry\"; id = 0; stream_id = 0;"
		   " fields := struct { uint32_t func; }; };\n");
	fprintf(f, "event { name = \"exit\"; id = 1; stream_id = 0; };\n");
	fprintf(f, "event { name = \"function\"; id = 2; stream_id = 0;"
		   " fields := struct { uint32_t func; uint64_t parent_ip; }; };\n");
	fprintf(f, "event { name = \"call\"; id = 3; stream_id = 0;"
		   " fields := struct { uint32_t func; uint64_t duration_ns; }; };\n");
	fprintf(f, "event { name = \"entry\"; id = 4; stream_id = 0;"
		   " fields := struct { uint16_t func; }; };\n");
	fprintf(f, "event { name = \"lost\"; id = 13; stream_id = 0;"
		   " fields := struct { uint32_t count; }; };\n");
	fprintf(f, "event { name = \"marker\"; id = 5; stream_id = 0;"
		   " fields := struct { string text; }; };\n");
	fprintf(f, "event { name = \"exit_depth\"; id = 8; stream_id = 0;"
		   " fields := struct { uint32_t depth; }; };\n");
	fprintf(f, "event { name = \"exit_lost\"; id = 14; stream_id = 0;"
		   " fields := struct { uint32_t count; }; };\n");
	fprintf(f, "event { name = \"ctx_switch\"; id = 12; stream_id = 0;"
		   " fields := struct { uint32_t depth; uint32_t from; uint32_t to; }; };\n");
	/* the values' items as the runtime declares them: babeltrace2 reads
	 * the arguments of these sessions too */
	fputs(FMT_TSDL_VALUE, f);
	fprintf(f, "event { name = \"entry_args\"; id = 10; stream_id = 0; fields := struct {"
		   " uint32_t func; uint16_t len; uint8_t n; struct dft_value args[n]; }; };\n");
	fprintf(f, "event { name = \"exit_retval\"; id = 11; stream_id = 0; fields := struct {"
		   " uint16_t len; uint8_t n; struct dft_value retval[n]; }; };\n");
	if (fclose(f))
		die("cannot write ctf/metadata");
}

static void append(const char *file, const char *line)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "a");
	if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f))
		die("cannot append to a text file");
}

static uint64_t num(const char *s)
{
	char *e;
	unsigned long long v;

	if (!s)
		die("missing number");
	errno = 0;
	v = strtoull(s, &e, 0);
	if (errno || *e)
		die("bad number");
	return v;
}

int main(int argc, char **argv)
{
	char line[8192], path[4096];
	int version = 1;

	if (argc != 2)
		die("usage: mkstream DIR < SCRIPT");
	dir = argv[1];
	snprintf(path, sizeof(path), "%s/ctf", dir);
	if ((mkdir(dir, 0755) && errno != EEXIST) || (mkdir(path, 0755) && errno != EEXIST))
		die("cannot create the directories");
	write_metadata();
	/* info is written at the end: "noversion" may come anywhere */
	char *info = calloc(1, 1);
	size_t info_len = 0;

	while (fgets(line, sizeof(line), stdin)) {
		char *rest, *cmd;
		size_t len = strlen(line);

		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		cmd = strtok_r(line, " ", &rest);
		if (!cmd || cmd[0] == '#')
			continue;
		if (!strcmp(cmd, "info")) {
			info = realloc(info, info_len + strlen(rest) + 2);
			if (!info)
				die("out of memory");
			strcpy(info + info_len, rest);
			info_len += strlen(rest);
			info[info_len++] = '\n';
			info[info_len] = 0;
		} else if (!strcmp(cmd, "noversion")) {
			version = 0;
		} else if (!strcmp(cmd, "site") || !strcmp(cmd, "map")) {
			char file[64], *p = strtok_r(NULL, " ", &rest);

			snprintf(file, sizeof(file), "%s-%s.txt", cmd[0] == 's' ? "sites" : "maps",
				 p ? p : "?");
			append(file, rest);
		} else if (!strcmp(cmd, "page")) {
			page = (size_t)num(strtok_r(NULL, " ", &rest));
		} else if (!strcmp(cmd, "stream")) {
			end_stream();
			pid = (unsigned)num(strtok_r(NULL, " ", &rest));
			tid = (unsigned)num(strtok_r(NULL, " ", &rest));
			snprintf(path, sizeof(path), "%s/ctf/stream-%u-%u", dir, pid, tid);
			out = fopen(path, "w");
			if (!out)
				die("cannot create a stream");
			discarded = seq = next_seq = 0;
			have_prev = 0;
			prev_ts = 0;
		} else if (!strcmp(cmd, "packet")) {
			end_packet();
		} else if (!strcmp(cmd, "discarded")) {
			end_packet();
			discarded = num(strtok_r(NULL, " ", &rest));
		} else if (!strcmp(cmd, "seq")) {
			end_packet();
			seq = num(strtok_r(NULL, " ", &rest));
			seq_set = 1;
		} else if (!strcmp(cmd, "raw")) {
			char *h;

			if (!pkt)
				begin_packet();
			while ((h = strtok_r(NULL, " ", &rest))) {
				if (used >= pkt_page)
					die("raw bytes overflow the page");
				pkt[used++] = (uint8_t)strtoul(h, NULL, 16);
			}
		} else {
			uint64_t ts = num(strtok_r(NULL, " ", &rest));
			char *a = strtok_r(NULL, " ", &rest);
			uint8_t *p;

			if (!strcmp(cmd, "entry")) {
				char *e = strtok_r(NULL, " ", &rest);

				p = reserve(0, ts, 4, e && !strcmp(e, "ext"));
				put32(p, (uint32_t)num(a));
			} else if (!strcmp(cmd, "exit")) {
				reserve(1, ts, 0, a && !strcmp(a, "ext"));
			} else if (!strcmp(cmd, "function") || !strcmp(cmd, "call")) {
				uint64_t b = num(strtok_r(NULL, " ", &rest));

				p = reserve(cmd[0] == 'f' ? 2 : 3, ts, 12, 0);
				put32(p, (uint32_t)num(a));
				put64(p + 4, b);
			} else if (!strcmp(cmd, "entry16")) {
				p = reserve(4, ts, 2, 0);
				put16(p, (uint16_t)num(a));
			} else if (!strcmp(cmd, "lost")) {
				p = reserve(13, ts, 4, 1);
				put32(p, (uint32_t)num(a));
			} else if (!strcmp(cmd, "exit_depth") || !strcmp(cmd, "exit_lost")) {
				p = reserve(cmd[5] == 'd' ? 8 : 14, ts, 4, 1);
				put32(p, (uint32_t)num(a));
			} else if (!strcmp(cmd, "ctx_switch")) {
				uint64_t from = num(strtok_r(NULL, " ", &rest));
				uint64_t to = num(strtok_r(NULL, " ", &rest));

				p = reserve(12, ts, 12, 1);
				put32(p, (uint32_t)num(a));
				put32(p + 4, (uint32_t)from);
				put32(p + 8, (uint32_t)to);
			} else if (!strcmp(cmd, "entry_args") || !strcmp(cmd, "exit_retval")) {
				/* an id above 6: always the extended header */
				int ent = cmd[1] == 'n';
				uint8_t data[1024];
				size_t n = 0;
				char *h = ent ? strtok_r(NULL, " ", &rest) : a;
				uint32_t func = ent ? (uint32_t)num(a) : 0;

				for (; h; h = strtok_r(NULL, " ", &rest)) {
					if (n == sizeof(data))
						die("too many bytes");
					data[n++] = (uint8_t)strtoul(h, NULL, 16);
				}
				p = reserve(ent ? 10 : 11, ts, (ent ? 6 : 2) + n, 1);
				if (ent) {
					put32(p, func);
					p += 4;
				}
				p[0] = (uint8_t)n;
				p[1] = (uint8_t)(n >> 8);
				memcpy(p + 2, data, n);
			} else if (!strcmp(cmd, "marker")) {
				size_t n = (a ? strlen(a) : 0) + (*rest ? 1 + strlen(rest) : 0);

				p = reserve(5, ts, n + 1, 0);
				snprintf((char *)p, n + 1, "%s%s%s", a ? a : "", *rest ? " " : "",
					 rest);
			} else {
				die("unknown command");
			}
		}
	}
	end_stream();
	snprintf(path, sizeof(path), "%s/info", dir);
	FILE *f = fopen(path, "w");
	if (!f || (version && fprintf(f, "version: 1\n") < 0) || fputs(info, f) < 0 || fclose(f))
		die("cannot write info");
	free(info);
	return 0;
}
