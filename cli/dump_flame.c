// SPDX-License-Identifier: MIT
/*
 * dump_flame.c - flame graphs of a session, from its call-path tree
 * (calltree.h):
 *
 *   dump --flame-graph   folded stacks, the input of flamegraph.pl, inferno
 *                        and speedscope: "main;foo;bar 180", one line per
 *                        call path with self time, the value its self time
 *                        in nanoseconds;
 *   dump --svg           a self-contained interactive flame graph: the
 *                        layout computed here, a small script embedded for
 *                        zoom (click), search (regular expression, Ctrl-F),
 *                        details and labels cut to fit.
 *
 * Both merge the selected threads (--tid) by function name and count the
 * time inside the selected range (--time-range) only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "views.h"

/* The names as they go out: printable, valid UTF-8 (views_text), and for
 * folded stacks without the separator ';'. */
static const char *out_name(const struct calltree *t, uint32_t name, char *buf, size_t size)
{
	views_text(t->names.str[name], buf, size);
	return buf;
}

/* Next node of a depth-first walk from K (children first), or 0 at the end. */
static uint32_t dfs_next(const struct calltree *t, uint32_t k, int descend)
{
	if (descend && t->node[k].child)
		return t->node[k].child;
	while (k) {
		if (t->node[k].next)
			return t->node[k].next;
		k = t->node[k].parent;
	}
	return 0;
}

static int build(struct tr_session *s, const struct cli_select *sel, struct calltree *t)
{
	struct ct_build b = {.sel = sel};
	int ret = ct_init(t);

	if (!ret)
		ret = ct_build(t, s, &b);
	if (!ret)
		for (uint32_t c = t->node[0].child; c; c = t->node[c].next)
			t->node[0].total_ns += t->node[c].total_ns;
	return ret;
}

/* No time at all: a function-tracer session (calls without durations), or
 * a range or thread with nothing in it. */
static int no_time(struct tr_session *s, const struct calltree *t, FILE *out)
{
	uint64_t calls = 0;

	for (size_t k = 1; k < t->n; k++)
		calls += t->node[k].calls;
	views_finish(s, out, 0);
	if (calls)
		cli_err("dump: the calls selected have no durations (a function tracer "
			"session): no flame graph; record with the function_graph tracer");
	else
		cli_err("dump: no calls in the threads and time range selected");
	return 1;
}

int dump_folded_run(struct tr_session *s, const struct cli_select *sel, FILE *out)
{
	struct calltree t;
	uint32_t *path = NULL;
	size_t cap = 0;
	int ret = build(s, sel, &t);

	if (!ret)
		ret = ct_sort(&t, 1);
	if (ret)
		goto out;
	if (!t.node[0].total_ns) {
		ret = no_time(s, &t, out);
		goto out;
	}
	for (uint32_t k = t.node[0].child; k; k = dfs_next(&t, k, 1)) {
		const struct ct_node *n = &t.node[k];
		size_t d = 0;

		if (!n->self_ns)
			continue;
		for (uint32_t p = k; p; p = t.node[p].parent) {
			if (d == cap) {
				size_t nc = cap ? cap * 2 : 64;
				uint32_t *np = realloc(path, nc * sizeof(*np));

				if (!np) {
					ret = -ENOMEM;
					goto out;
				}
				path = np;
				cap = nc;
			}
			path[d++] = p;
		}
		while (d--) {
			char buf[1024];

			out_name(&t, t.node[path[d]].name, buf, sizeof(buf));
			for (char *c = buf; (c = strchr(c, ';'));)
				*c = ':';
			fputs(buf, out);
			fputc(d ? ';' : ' ', out);
		}
		fprintf(out, "%" PRIu64 "\n", n->self_ns);
	}
	ret = views_finish(s, out, 0);
out:
	free(path);
	ct_free(&t);
	return ret;
}

/* ---- SVG ---------------------------------------------------------------- */

#define SVG_W	   1200
#define SVG_PAD	   10
#define FRAME_H	   16
#define SVG_TOP	   50  /* title, buttons */
#define SVG_BOTTOM 34  /* details line */
#define CHAR_W	   7.2 /* 12px monospace */

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

/* NAME cut to fit WIDTH pixels as the script does: whole, or its first
 * characters and "..", or nothing. Counts UTF-8 characters. */
static void label(FILE *out, const char *name, double width)
{
	long fit = (long)((width - 6) / CHAR_W);
	size_t nch = 0, cut = 0;

	for (const char *p = name; *p; p++)
		nch += ((unsigned char)*p & 0xc0) != 0x80;
	if ((long)nch <= fit) {
		xml_text(out, name);
		return;
	}
	if (fit < 3)
		return;
	/* the byte where character fit - 1 starts */
	for (long c = 0; name[cut]; cut++) {
		if (((unsigned char)name[cut] & 0xc0) != 0x80 && c++ == fit - 2)
			break;
	}
	{
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int)cut, name);
		xml_text(out, buf);
		fputs("..", out);
	}
}

/* A warm colour from the name, stable from run to run. */
static void colour(const char *name, char *buf, size_t size)
{
	uint32_t h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(buf, size, "rgb(%u,%u,%u)", 205 + h % 50, 80 + (h >> 8) % 150, (h >> 16) % 60);
}

static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "var W = 1200, PAD = 10, CW = 7.2, frames = [], details, matched, resetBtn, searchBtn;\n"
    "var searching = null, zoomedTo = null;\n"
    "function byId(id) { return document.getElementById(id); }\n"
    "function fit(name, w) {\n"
    "  var n = Math.floor((w - 6) / CW), chars = Array.from(name);\n"
    "  if (chars.length <= n) return name;\n"
    "  return n >= 3 ? chars.slice(0, n - 2).join('') + '..' : '';\n"
    "}\n"
    "function place(f, x, w) {\n"
    "  f.r.setAttribute('x', x.toFixed(2)); f.r.setAttribute('width', w.toFixed(2));\n"
    "  f.t.setAttribute('x', (x + 3).toFixed(2)); f.t.textContent = fit(f.name, w);\n"
    "}\n"
    "function init() {\n"
    "  details = byId('details'); matched = byId('matched');\n"
    "  resetBtn = byId('reset'); searchBtn = byId('search');\n"
    "  var gs = byId('frames').getElementsByTagName('g');\n"
    "  for (var i = 0; i < gs.length; i++) {\n"
    "    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
    "    var info = g.getElementsByTagName('title')[0].textContent;\n"
    "    var f = {g: g, r: r, t: g.getElementsByTagName('text')[0], info: info,\n"
    "      name: info.split('\\n')[0], x: +r.getAttribute('x'), w: +r.getAttribute('width'),\n"
    "      y: +r.getAttribute('y'), fill: r.getAttribute('fill')};\n"
    "    frames.push(f);\n"
    "    g.addEventListener('click', zoom.bind(null, f));\n"
    "    g.addEventListener('mouseover', function (f) {\n"
    "      details.textContent = f.info.replace('\\n', ': '); }.bind(null, f));\n"
    "    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
    "  }\n"
    "  resetBtn.addEventListener('click', unzoom);\n"
    "  searchBtn.addEventListener('click', function () {\n"
    "    if (searching !== null) { search(null); return; }\n"
    "    var term = prompt('Search for a function (regular expression)', '');\n"
    "    if (term) search(term);\n"
    "  });\n"
    "  window.addEventListener('keydown', function (e) {\n"
    "    if ((e.ctrlKey || e.metaKey) && e.key === 'f') {\n"
    "      e.preventDefault(); var term = prompt('Search for a function (regular expression)', "
    "'');\n"
    "      if (term) search(term);\n"
    "    } else if (e.key === 'Escape') { unzoom(); search(null); }\n"
    "  });\n"
    "  /* #zoom=NAME and #search=REGEX open the graph in that state */\n"
    "  var h = decodeURIComponent(location.hash.slice(1)).split('&');\n"
    "  for (var j = 0; j < h.length; j++) {\n"
    "    if (h[j].indexOf('search=') === 0) search(h[j].slice(7));\n"
    "    if (h[j].indexOf('zoom=') === 0) {\n"
    "      var want = h[j].slice(5);\n"
    "      for (var k = 0; k < frames.length; k++)\n"
    "        if (frames[k].name === want) { zoom(frames[k]); break; }\n"
    "    }\n"
    "  }\n"
    "  document.documentElement.setAttribute('data-ready', frames.length);\n"
    "}\n"
    "function zoom(z) {\n"
    "  var x0 = z.x, x1 = z.x + z.w, k = (W - 2 * PAD) / z.w, eps = 1e-3;\n"
    "  zoomedTo = z;\n"
    "  for (var i = 0; i < frames.length; i++) {\n"
    "    var f = frames[i];\n"
    "    if (f.y <= z.y && f.x >= x0 - eps && f.x + f.w <= x1 + eps) {\n"
    "      f.g.style.display = ''; f.g.classList.remove('parent');\n"
    "      place(f, PAD + (f.x - x0) * k, f.w * k);\n"
    "    } else if (f.y > z.y && f.x <= x0 + eps && f.x + f.w >= x1 - eps) {\n"
    "      f.g.style.display = ''; f.g.classList.add('parent'); place(f, PAD, W - 2 * PAD);\n"
    "    } else {\n"
    "      f.g.style.display = 'none';\n"
    "    }\n"
    "  }\n"
    "  resetBtn.style.opacity = 1;\n"
    "}\n"
    "function unzoom() {\n"
    "  zoomedTo = null;\n"
    "  for (var i = 0; i < frames.length; i++) {\n"
    "    var f = frames[i];\n"
    "    f.g.style.display = ''; f.g.classList.remove('parent'); place(f, f.x, f.w);\n"
    "  }\n"
    "  resetBtn.style.opacity = 0.2;\n"
    "}\n"
    "function search(term) {\n"
    "  var re = null, spans = [], total = frames.length ? frames[0].w : 0;\n"
    "  searching = term;\n"
    "  if (term !== null) {\n"
    "    try { re = new RegExp(term); } catch (e) { matched.textContent = 'bad expression'; "
    "return; }\n"
    "  }\n"
    "  for (var i = 0; i < frames.length; i++) {\n"
    "    var f = frames[i], hit = re !== null && re.test(f.name);\n"
    "    f.r.setAttribute('fill', hit ? 'rgb(230,0,230)' : f.fill);\n"
    "    if (hit) spans.push([f.x, f.x + f.w]);\n"
    "  }\n"
    "  /* the share of the whole covered by matches, nested ones counted once */\n"
    "  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
    "  var covered = 0, end = -1;\n"
    "  for (var j = 0; j < spans.length; j++) {\n"
    "    var a = Math.max(spans[j][0], end);\n"
    "    if (spans[j][1] > a) covered += spans[j][1] - a;\n"
    "    end = Math.max(end, spans[j][1]);\n"
    "  }\n"
    "  searchBtn.textContent = re ? 'Clear search' : 'Search';\n"
    "  matched.textContent = re ? 'Matched: ' + (total ? 100 * covered / total : 0).toFixed(1) + "
    "'%' : '';\n"
    "}\n"
    "window.addEventListener('error', function (e) {\n"
    "  document.documentElement.setAttribute('data-error', e.message);\n"
    "});\n"
    "window.addEventListener('load', init);\n"
    "]]></script>\n";

int dump_svg_run(struct tr_session *s, const struct cli_select *sel, FILE *out)
{
	struct calltree t;
	double *cursor = NULL;
	unsigned depth;
	uint64_t total;
	double scale, min_w = 0.1;
	int ret = build(s, sel, &t), height;
	char title[512], cmd[256], buf[1024], num[64], fill[32];

	if (!ret)
		ret = ct_sort(&t, 1);
	if (ret)
		goto out;
	total = t.node[0].total_ns;
	if (!total) {
		ret = no_time(s, &t, out);
		goto out;
	}
	depth = ct_depth(&t);
	cursor = calloc(depth + 2, sizeof(*cursor));
	if (!cursor) {
		ret = -ENOMEM;
		goto out;
	}
	height = SVG_TOP + (int)(depth + 1) * FRAME_H + SVG_BOTTOM;
	scale = (double)(SVG_W - 2 * SVG_PAD) / (double)total;
	views_text(s->info.command ? s->info.command : "", cmd, sizeof(cmd));
	snprintf(title, sizeof(title), "Flame graph: %s", cmd);
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>\n"
		"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
		"#title { font-size: 17px; text-anchor: middle; }\n"
		"#frames text { pointer-events: none; }\n"
		"#frames g:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		".parent { opacity: 0.5; }\n"
		".btn { cursor: pointer; fill: #204a87; }\n"
		"</style>\n",
		SVG_W, height, SVG_W, height);
	fputs(svg_script, out);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f4\"/>\n");
	fprintf(out, "<text id=\"title\" x=\"%d\" y=\"24\">", SVG_W / 2);
	xml_text(out, title);
	fprintf(out,
		"</text>\n<text x=\"%d\" y=\"42\" style=\"text-anchor: middle\">width: the time "
		"of a call and its callees (%s in all); click to zoom</text>\n",
		SVG_W / 2, cli_fmt_duration(total, num, sizeof(num)) + strspn(num, " "));
	fprintf(out,
		"<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"24\" style=\"opacity: 0.2\">Reset "
		"zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" style=\"text-anchor: "
		"end\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" style=\"text-anchor: end\"></text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n<g id=\"frames\">\n",
		SVG_PAD, SVG_W - SVG_PAD, SVG_W - SVG_PAD, height - 12, SVG_PAD, height - 12);

	/* Depth-first, the root at the bottom; a frame's children start at its
	 * x (cursor[d + 1]) and it moves its own row's cursor on. */
	cursor[0] = SVG_PAD;
	for (uint32_t k = 0;;) {
		const struct ct_node *n = &t.node[k];
		unsigned d = 0;
		double x, w;
		int descend;

		for (uint32_t p = k; p; p = t.node[p].parent)
			d++;
		x = cursor[d];
		w = (double)n->total_ns * scale;
		cursor[d] += w;
		descend = w >= min_w && d <= depth;
		if (descend) {
			const char *name = k ? out_name(&t, n->name, buf, sizeof(buf)) : "all";
			char tot[32], self[32];
			int y = SVG_TOP + (int)(depth - d) * FRAME_H;

			cursor[d + 1] = x;
			colour(name, fill, sizeof(fill));
			fputs("<g><title>", out);
			xml_text(out, name);
			fprintf(out, "\n%s (%.2f%%), self %s, %s call%s</title>",
				cli_fmt_duration(n->total_ns, tot, sizeof(tot)) + strspn(tot, " "),
				100.0 * (double)n->total_ns / (double)total,
				cli_fmt_duration(n->self_ns, self, sizeof(self)) +
				    strspn(self, " "),
				k ? cli_thousands(n->calls, num, sizeof(num)) : "-",
				n->calls == 1 ? "" : "s");
			fprintf(out,
				"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
				"fill=\"%s\"/><text x=\"%.2f\" y=\"%d\">",
				x, y, w, FRAME_H - 1, k ? fill : "rgb(200,200,200)", x + 3,
				y + FRAME_H - 4);
			label(out, name, w);
			fputs("</text></g>\n", out);
		}
		k = dfs_next(&t, k, descend);
		if (!k)
			break;
	}
	fputs("</g>\n</svg>\n", out);
	ret = views_finish(s, out, 0);
out:
	free(cursor);
	ct_free(&t);
	return ret;
}
