// SPDX-License-Identifier: MIT
/*
 * dump_ctf.c - `dynftrace dump --ctf -o DIR`: the session's CTF trace
 * (ctf/), rewritten so that CTF readers (babeltrace2) show function names.
 *
 * The runtime writes the session's metadata once, at the start, before any
 * function is known, and site ids are per process image: its `func` fields
 * are plain integers. Here the image's names become CTF 1.8 enumerations
 * (labels are names, values site ids), which babeltrace2 prints as
 * ( "name" : container = ID ). Images whose id -> name tables are the same
 * (a program's forks, runs of the same program) share one stream class and
 * its enumerations; each other table gets a stream class of its own, and
 * the stream files are copied with that class's id in their packet
 * headers: the one byte change to the events' data. The enumeration goes
 * where an event carries an id: a 32-bit `func`, entry16's 16-bit one
 * (ids up to 65535) and function_near's 22-bit one (ids below 2^22); the
 * 16-bit one only for tracers that write entries, the 22-bit one only for
 * the function tracer, so that a name is written twice, not three times;
 * and only the names of functions the written streams call (the streams
 * are read once for that, and checked), not every site of the table. The rest of the metadata is
 * the session's own, statement by statement: its declarations once, its stream block and events
 * once per stream class, so any event format the reader accepts is kept as it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "format.h"
#include "trace_read.h"
#include "views.h"

/* The fields of format.h's events that hold a site id, each replaced by
 * the stream class's enumeration of that container. */
static const struct {
	const char *field, *suffix, *container;
	uint32_t max;
} func_fields[] = {
    {"uint32_t func;", "", "uint32_t", UINT32_MAX},
    {"uint16_t func;", "16", "uint16_t", FMT_ENTRY16_MAX},
    {"integer { size = " FMT_STR(FMT_NEAR_FUNC_BITS) "; align = 1; signed = false; } func;", "22",
     "integer { size = " FMT_STR(FMT_NEAR_FUNC_BITS) "; align = 1; signed = false; }",
     FMT_NEAR_FUNC_MAX},
};
#define NFIELDS (sizeof(func_fields) / sizeof(func_fields[0]))

/* A top-level statement of the session's metadata. */
struct stmt {
	const char *at;
	size_t len;
};

struct ctf_dump {
	struct tr_session *s;
	FILE *meta;
	char *label; /* a name made printable, grown as needed */
	size_t label_size;
	int use[NFIELDS]; /* which containers get an enumeration */
	struct stmt stream, *ev;
	size_t nev;
};

/* P past blanks and comments. */
static const char *skip_blank(const char *p)
{
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (p[0] != '/' || p[1] != '*')
			return p;
		const char *e = strstr(p + 2, "*/");
		if (!e)
			return p + strlen(p);
		p = e + 2;
	}
}

/* The end of the top-level statement at P: after its ';' outside braces,
 * strings and comments (or the end of the text). */
static const char *stmt_end(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
			if (!*p)
				break;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			if (!e)
				return p + strlen(p);
			p = e + 1;
		} else if (*p == '{') {
			depth++;
		} else if (*p == '}') {
			depth--;
		} else if (*p == ';' && depth <= 0) {
			return p + 1;
		}
	}
	return p;
}

static int starts(const struct stmt *st, const char *word)
{
	size_t n = strlen(word);

	return st->len > n && !strncmp(st->at, word, n) &&
	       (st->at[n] == ' ' || st->at[n] == '\t' || st->at[n] == '\n' || st->at[n] == '{');
}

static uint64_t table_hash(struct tr_proc *p)
{
	uint64_t h = 1469598103934665603u;

	for (size_t i = 0; i < p->nsites; i++) {
		const char *n = tr_func_name(p, p->sites[i].id);
		uint32_t id = p->sites[i].id;

		for (int b = 0; b < 4; b++)
			h = (h ^ ((id >> (8 * b)) & 0xff)) * 1099511628211u;
		for (; *n; n++)
			h = (h ^ (unsigned char)*n) * 1099511628211u;
		h = (h ^ 0xff) * 1099511628211u;
	}
	return h;
}

static int same_table(struct tr_proc *a, struct tr_proc *b)
{
	if (a->nsites != b->nsites)
		return 0;
	for (size_t i = 0; i < a->nsites; i++)
		if (a->sites[i].id != b->sites[i].id ||
		    strcmp(tr_func_name(a, a->sites[i].id), tr_func_name(b, b->sites[i].id)))
			return 0;
	return 1;
}

/* NAME as a TSDL string literal's contents: printable UTF-8 (views_text:
 * other bytes as the text \xNN), then '"' and '\' escaped. */
static int put_label(struct ctf_dump *d, const char *name)
{
	size_t need = strlen(name) * 4 + 1;

	if (need > d->label_size) {
		char *n = realloc(d->label, need);

		if (!n)
			return -ENOMEM;
		d->label = n;
		d->label_size = need;
	}
	views_text(name, d->label, d->label_size);
	fputc('"', d->meta);
	for (const char *c = d->label; *c; c++) {
		if (*c == '"' || *c == '\\')
			fputc('\\', d->meta);
		fputc(*c, d->meta);
	}
	fputc('"', d->meta);
	return 0;
}

/* Stream class K: its enumerations (the names of P's sites USED marks, by
 * index; none when P is NULL or none is: the ids stay integers), the
 * stream block, the events. */
static int write_class(struct ctf_dump *d, unsigned k, struct tr_proc *p, const uint8_t *used)
{
	int has[NFIELDS] = {0};

	for (size_t f = 0; f < NFIELDS; f++) {
		size_t n = 0;

		for (size_t i = 0; p && i < p->nsites && p->sites[i].id <= func_fields[f].max; i++)
			n += used[i];
		if (!d->use[f] || !n)
			continue;
		has[f] = 1;
		fprintf(d->meta, "enum dft_func%s_%u : %s {\n", func_fields[f].suffix, k,
			func_fields[f].container);
		for (size_t i = 0; i < p->nsites && p->sites[i].id <= func_fields[f].max; i++) {
			if (!used[i])
				continue;
			fputc('\t', d->meta);
			if (put_label(d, tr_func_name(p, p->sites[i].id)))
				return -ENOMEM;
			fprintf(d->meta, " = %u,\n", p->sites[i].id);
		}
		fputs("};\n\n", d->meta);
	}
	/* the stream block with id K (the first "id =" in it is the stream's) */
	const char *st = d->stream.at, *end = st + d->stream.len, *id = st;
	while ((id = strstr(id, "id = ")) && id < end && id[-1] != '\t' && id[-1] != ' ')
		id += 5;
	if (id && id < end) {
		const char *num = id + 5;
		fprintf(d->meta, "%.*sid = %u%.*s\n\n", (int)(id - st), st, k,
			(int)(end - num - strspn(num, "0123456789")),
			num + strspn(num, "0123456789"));
	} else {
		const char *brace = memchr(st, '{', d->stream.len);
		int n = brace ? (int)(brace + 1 - st) : (int)d->stream.len;
		fprintf(d->meta, "%.*s\n\tid = %u;%.*s\n\n", n, st, k, (int)d->stream.len - n,
			st + n);
	}
	/* each event with stream_id K and its site id typed by an enumeration */
	for (size_t e = 0; e < d->nev; e++) {
		const char *ev = d->ev[e].at, *eend = ev + d->ev[e].len, *p = ev;
		const char *sid = strstr(ev, "stream_id = "), *at = NULL;
		size_t f;

		if (sid >= eend)
			sid = NULL;
		for (f = 0; f < NFIELDS; f++)
			if (has[f] && (at = strstr(ev, func_fields[f].field)) && at < eend)
				break;
		if (f == NFIELDS)
			at = NULL;
		if (!sid) {
			const char *brace = memchr(ev, '{', d->ev[e].len);
			if (brace) {
				fprintf(d->meta, "%.*s stream_id = %u;", (int)(brace + 1 - ev), ev,
					k);
				p = brace + 1;
			}
		}
		if (sid && (!at || sid < at)) {
			fprintf(d->meta, "%.*sstream_id = %u", (int)(sid - p), p, k);
			p = sid + 12;
			p += strspn(p, "0123456789");
		}
		if (at) {
			fprintf(d->meta, "%.*senum dft_func%s_%u func;", (int)(at - p), p,
				func_fields[f].suffix, k);
			p = at + strlen(func_fields[f].field);
		}
		if (sid && at && sid > at) {
			fprintf(d->meta, "%.*sstream_id = %u", (int)(sid - p), p, k);
			p = sid + 12;
			p += strspn(p, "0123456789");
		}
		fprintf(d->meta, "%.*s\n\n", (int)(eend - p), p);
	}
	return 0;
}

/* The whole packets of stream ST into DIR/NAME, their stream_id set to K,
 * up to the packet that holds the damage the reader found (told by the
 * caller). 0, 1 when a packet is damaged (said; what precedes is
 * written), or -errno for the output (said). */
static int copy_stream(const struct tr_stream *st, const char *dir, unsigned k)
{
	uint64_t limit = st->failed && st->fail_off < st->size ? st->fail_off : st->size;
	char *path;
	uint64_t off = 0;
	int ret = 0;
	FILE *f;

	if (asprintf(&path, "%s/%s", dir, st->name) < 0)
		return -ENOMEM;
	f = fopen(path, "w");
	if (!f) {
		ret = -errno;
		cli_err("cannot create '%s': %s", path, strerror(errno));
		free(path);
		return ret;
	}
	while (off < limit) {
		const uint8_t *pk = st->data + off;
		uint32_t magic, id = k;
		uint64_t bits;

		if (limit - off < FMT_HDR_SIZE) {
			if (limit < st->size)
				break;
			cli_err("%s: a packet cut short at offset %llu", st->path,
				(unsigned long long)off);
			ret = 1;
			break;
		}
		memcpy(&magic, pk, 4);
		memcpy(&bits, pk + FMT_PACKET_HEADER + 24, 8); /* packet_size */
		if (magic != FMT_PACKET_MAGIC) {
			cli_err("%s: bad packet magic at offset %llu", st->path,
				(unsigned long long)off);
			ret = 1;
			break;
		}
		if (bits % 8 || bits / 8 < FMT_HDR_SIZE) {
			cli_err("%s: bad packet size at offset %llu", st->path,
				(unsigned long long)off);
			ret = 1;
			break;
		}
		if (bits / 8 > st->size - off) {
			cli_err("%s: a packet cut short at offset %llu", st->path,
				(unsigned long long)off);
			ret = 1;
			break;
		}
		if (bits / 8 > limit - off)
			break; /* the damaged packet: said already */
		if (fwrite(pk, 1, 20, f) != 20 || fwrite(&id, 1, 4, f) != 4 ||
		    fwrite(pk + 24, 1, bits / 8 - 24, f) != bits / 8 - 24)
			break;
		off += bits / 8;
	}
	if ((ferror(f) | fclose(f)) && ret <= 0) {
		ret = -EIO;
		cli_err("cannot write '%s': %s", path, strerror(errno));
	}
	free(path);
	return ret;
}

int dump_ctf_run(struct tr_session *s, const struct cli_select *sel, const char *dir)
{
	struct ctf_dump d = {.s = s};
	char *path = NULL, *text = NULL;
	struct stmt *decl = NULL;
	size_t ndecl = 0;
	size_t *cls = NULL, *rep = NULL, nrep = 0;
	uint64_t *hash = NULL;
	uint8_t **used = NULL;
	int ret = -ENOMEM, damaged = 0;
	long len;
	FILE *in;

	/* the session's own metadata up to its stream block: types, trace
	 * (uuid), env, clock (offset), the headers' structs */
	if (asprintf(&path, "%s/ctf/metadata", s->dir) < 0)
		goto out;
	in = fopen(path, "r");
	if (!in || fseek(in, 0, SEEK_END) || (len = ftell(in)) < 0 || fseek(in, 0, SEEK_SET) ||
	    !(text = malloc((size_t)len + 1)) || fread(text, 1, (size_t)len, in) != (size_t)len) {
		cli_err("cannot read %s: %s", path, errno ? strerror(errno) : "short read");
		ret = 1;
		if (in)
			fclose(in);
		goto out;
	}
	fclose(in);
	text[len] = 0;
	/* its statements: the stream block and the events are per class, the
	 * rest (types, trace, env, clock) is written once */
	if (strncmp(text, "/* CTF 1.8", 10))
		goto bad;
	d.ev = calloc((size_t)len + 1, sizeof(*d.ev)); /* a statement takes a byte at least */
	decl = calloc((size_t)len + 1, sizeof(*decl));
	if (!d.ev || !decl)
		goto out;
	for (const char *p = skip_blank(text); *p; p = skip_blank(p)) {
		struct stmt st = {p, 0};

		p = stmt_end(p);
		st.len = (size_t)(p - st.at);
		if (st.at[st.len - 1] != ';')
			goto bad;
		if (starts(&st, "stream")) {
			if (d.stream.at)
				goto bad; /* one stream class: the runtime's */
			d.stream = st;
		} else if (starts(&st, "event")) {
			d.ev[d.nev++] = st;
		} else {
			decl[ndecl++] = st;
		}
	}
	if (!d.stream.at || !d.nev) {
	bad:
		cli_err("%s: not the CTF metadata dynftrace writes, cannot rewrite it "
			"(babeltrace2 reads %s/ctf as it is)",
			path, s->dir);
		ret = 1;
		goto out;
	}

	if (mkdir(dir, 0755) && errno != EEXIST) {
		cli_err("cannot create '%s': %s", dir, strerror(errno));
		ret = 1;
		goto out;
	}
	free(path);
	if (asprintf(&path, "%s/metadata", dir) < 0) {
		path = NULL;
		goto out;
	}
	if (access(path, F_OK) == 0) {
		cli_err("'%s' holds a CTF trace already: give a new or empty directory", dir);
		ret = 1;
		goto out;
	}

	/* one stream class per distinct table of the images with streams */
	cls = calloc(s->nprocs + 1, sizeof(*cls));
	rep = calloc(s->nprocs + 1, sizeof(*rep));
	hash = calloc(s->nprocs + 1, sizeof(*hash));
	if (!cls || !rep || !hash)
		goto out;
	for (size_t i = 0; i <= s->nprocs; i++) /* the last: streams without sites */
		cls[i] = SIZE_MAX;
	for (size_t i = 0; i < s->nstreams; i++) {
		size_t pi = s->streams[i].proc ? s->streams[i].proc_idx : s->nprocs;

		if (!cli_select_tid(sel, s->streams[i].tid) || cls[pi] != SIZE_MAX)
			continue;
		if (pi < s->nprocs) {
			hash[pi] = table_hash(&s->procs[pi]);
			for (size_t r = 0; r < nrep && cls[pi] == SIZE_MAX; r++)
				if (rep[r] < s->nprocs && hash[rep[r]] == hash[pi] &&
				    same_table(&s->procs[rep[r]], &s->procs[pi]))
					cls[pi] = r;
		}
		if (cls[pi] == SIZE_MAX) {
			cls[pi] = nrep;
			rep[nrep++] = pi;
		}
	}

	/* the sites the streams call, by class; the streams checked */
	used = calloc(nrep + 1, sizeof(*used));
	if (!used)
		goto out;
	for (size_t r = 0; r < nrep; r++)
		if (rep[r] < s->nprocs &&
		    !(used[r] = calloc(s->procs[rep[r]].nsites + 1, sizeof(**used))))
			goto out;
	for (size_t i = 0; i < s->nstreams; i++) {
		struct tr_stream *st = &s->streams[i];
		struct tr_event ev;

		if (!cli_select_tid(sel, st->tid))
			continue;
		tr_stream_rewind(st);
		while (tr_stream_next(st, &ev) > 0) {
			const struct tr_site *site;

			if ((ev.type == TR_ENTRY || ev.type == TR_FUNCTION || ev.type == TR_CALL) &&
			    st->proc && (site = tr_site(st->proc, ev.func)))
				used[cls[st->proc_idx]][site - st->proc->sites] = 1;
		}
		if (st->failed) {
			cli_err("%s", st->err);
			damaged = 1;
		}
	}

	d.meta = fopen(path, "w");
	if (!d.meta) {
		cli_err("cannot create '%s': %s", path, strerror(errno));
		ret = 1;
		goto out;
	}
	d.use[0] = 1;
	if (s->info.tracer && !strcmp(s->info.tracer, "function"))
		d.use[2] = 1;
	else
		d.use[1] = 1;
	fputs("/* CTF 1.8 */\n\n", d.meta);
	for (size_t i = 0; i < ndecl; i++)
		fprintf(d.meta, "%.*s\n\n", (int)decl[i].len, decl[i].at);
	ret = 0;
	for (size_t r = 0; r < nrep && !ret; r++)
		ret = write_class(&d, (unsigned)r, rep[r] < s->nprocs ? &s->procs[rep[r]] : NULL,
				  used[r]);
	if ((ferror(d.meta) | fclose(d.meta)) && !ret) {
		cli_err("cannot write '%s': %s", path, strerror(errno));
		ret = 1;
	}
	for (size_t i = 0; i < s->nstreams && ret >= 0 && ret != 1; i++) {
		const struct tr_stream *st = &s->streams[i];
		size_t pi = st->proc ? st->proc_idx : s->nprocs;
		int r;

		if (!cli_select_tid(sel, st->tid))
			continue;
		r = copy_stream(st, dir, (unsigned)cls[pi]);
		if (r == 1)
			damaged = 1;
		else if (r)
			ret = r == -ENOMEM ? r : 1;
	}
	if (!ret && damaged)
		ret = 1;
out:
	if (ret == -ENOMEM)
		cli_err("out of memory while writing the CTF trace");
	for (size_t r = 0; used && r < nrep; r++)
		free(used[r]);
	free(used);
	free(d.label);
	free(d.ev);
	free(decl);
	free(cls);
	free(rep);
	free(hash);
	free(text);
	free(path);
	return ret ? 1 : 0;
}
