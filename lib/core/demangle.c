/* SPDX-License-Identifier: MIT */
/*
 * demangle.c - the Itanium C++ ABI's mangled names, read into a small tree
 * of nodes, then printed in c++filt's layout (full) or without template
 * arguments and parameters (simple). See demangle.h.
 *
 * Printing follows the declarator rules of C++: a type prints a left part
 * and a right part, so that a pointer to a function prints as
 * "void (*)(int)" and one to an array as "int (*) [3]". Template
 * parameters (T_) are resolved while parsing, to the arguments of the
 * template that encloses the function; packs (J...E) expand where a pack
 * expansion (Dp) meets them, element by element.
 *
 * Everything lives in one malloc'd context per call: no global state.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"

enum kind {
	K_NAME,	    /* text */
	K_NESTED,   /* a::b */
	K_TEMPLATE, /* a<list> */
	K_QUAL,	    /* a const (cv) */
	K_PTR,
	K_LREF,
	K_RREF,
	K_FUNC,	    /* a=return, list=params, cv, ref, noexcept in flags */
	K_ARRAY,    /* a=element, text=dimension */
	K_PTRMEM,   /* a=class, b=member type */
	K_ENCODING, /* a=name, b=return or -1, list=params, cv, ref */
	K_SPECIAL,  /* text a */
	K_CTOR,	    /* a=the name it is the constructor of; dtor: flags */
	K_ABI,	    /* a[abi:text] */
	K_LOCAL,    /* a::b, a an encoding */
	K_LAMBDA,   /* {lambda(list)#num} */
	K_UNNAMED,  /* {unnamed type#num} */
	K_PACKEXP,  /* a... */
	K_ARGPACK,  /* list (a J...E pack) */
	K_LITERAL,  /* a=type, text=value, flags: negative */
	K_OPERATOR, /* operator text */
	K_CONV,	    /* operator a */
	K_VECTOR,   /* a __vector(text) */
	K_CLONE,    /* a [clone text] */
	K_STDSUB,   /* text (simple), b=-1; ctor form: flags=1, text the full name */
	K_CTORVT,   /* construction vtable for a-in-b */
	K_EXPR,	    /* an expression (X...E, decltype): parsed, never printed */
};

#define CV_RESTRICT 1
#define CV_VOLATILE 2
#define CV_CONST    4

#define FL_DTOR	    1 /* K_CTOR */
#define FL_NEG	    1 /* K_LITERAL */
#define FL_NOEXCEPT 2 /* K_FUNC */

struct node {
	uint8_t kind, cv, ref, flags;
	int a, b;
	int list, nlist; /* into dm.lists */
	const char *text;
	uint32_t len;
	uint32_t num;
};

#define MAX_NODES 8192
#define MAX_LIST  256
#define MAX_SUBS  1024
#define MAX_DEPTH 256

struct dm {
	const char *p, *end;
	struct node *n;
	int nn, ncap;
	int *lists;
	int nl, lcap;
	int subs[MAX_SUBS];
	int nsubs;
	int tmpl;		   /* the K_TEMPLATE node whose arguments T_ names, or -1 */
	uint8_t name_cv, name_ref; /* the qualifiers of the last name parsed */
	int depth;
	int bad;
	/* printing */
	char *out;
	size_t len, size;
	int simple;
	int pack_i;	/* the element pack_node prints, -1: all */
	int pack_node;	/* the K_ARGPACK a pack expansion expands, or -1 */
	char last_fake; /* what c++filt believes the last character is */
	int no_ret;	/* the next encoding prints no return type (local names) */
};

static int fail(struct dm *d)
{
	d->bad = 1;
	return -1;
}

static int peek(const struct dm *d)
{
	return d->p < d->end ? (unsigned char)*d->p : 0;
}

static int peek2(const struct dm *d)
{
	return d->p + 1 < d->end ? (unsigned char)d->p[1] : 0;
}

static int eat(struct dm *d, int c)
{
	if (peek(d) == c) {
		d->p++;
		return 1;
	}
	return 0;
}

static int mk(struct dm *d, enum kind k)
{
	if (d->bad)
		return -1;
	if (d->nn >= d->ncap) {
		/* grown as needed: most names take a few dozen nodes */
		int cap = d->ncap * 2;
		struct node *n = cap <= MAX_NODES ? realloc(d->n, (size_t)cap * sizeof(*n)) : NULL;
		if (!n)
			return fail(d);
		d->n = n;
		d->ncap = cap;
	}
	struct node *x = &d->n[d->nn];
	memset(x, 0, sizeof(*x));
	x->kind = (uint8_t)k;
	x->a = x->b = x->list = -1;
	return d->nn++;
}

static int mk_text(struct dm *d, enum kind k, const char *t, size_t len)
{
	int i = mk(d, k);
	if (i >= 0) {
		d->n[i].text = t;
		d->n[i].len = (uint32_t)len;
	}
	return i;
}

static int mk1(struct dm *d, enum kind k, int a)
{
	if (a < 0)
		return fail(d);
	int i = mk(d, k);
	if (i >= 0)
		d->n[i].a = a;
	return i;
}

static int mk2(struct dm *d, enum kind k, int a, int b)
{
	if (a < 0 || b < 0)
		return fail(d);
	int i = mk(d, k);
	if (i >= 0) {
		d->n[i].a = a;
		d->n[i].b = b;
	}
	return i;
}

/* Store the N node indices of TMP as node I's list. */
static int set_list(struct dm *d, int i, const int *tmp, int n)
{
	if (i < 0)
		return -1;
	if (d->nl + n > d->lcap) {
		int cap = (d->lcap ? d->lcap * 2 : 256) + n;
		int *l = realloc(d->lists, (size_t)cap * sizeof(*l));
		if (!l)
			return fail(d);
		d->lists = l;
		d->lcap = cap;
	}
	if (n) /* an empty list may have no storage yet (memcpy of NULL) */
		memcpy(d->lists + d->nl, tmp, (size_t)n * sizeof(*tmp));
	d->n[i].list = d->nl;
	d->n[i].nlist = n;
	d->nl += n;
	return i;
}

static void add_sub(struct dm *d, int i)
{
	if (i < 0)
		return;
	if (d->nsubs >= MAX_SUBS) {
		fail(d);
		return;
	}
	d->subs[d->nsubs++] = i;
}

/* ---- parsing ------------------------------------------------------------ */

static int parse_type(struct dm *d);
static int parse_encoding(struct dm *d, int top);
static int parse_name(struct dm *d, int *is_tmpl_fn);
static int parse_template_args(struct dm *d, int name);
static int parse_literal(struct dm *d);
static int parse_template_arg(struct dm *d);

static int parse_number(struct dm *d, long *v)
{
	int neg = eat(d, 'n');
	if (peek(d) < '0' || peek(d) > '9')
		return fail(d);
	long x = 0;
	while (peek(d) >= '0' && peek(d) <= '9') {
		if (x > 100000000)
			return fail(d);
		x = x * 10 + (*d->p++ - '0');
	}
	*v = neg ? -x : x;
	return 0;
}

/* <seq-id> _ : base 36, empty is 0 (returned as N + 1 for S<n>_). */
static int parse_seq(struct dm *d, long *v)
{
	if (eat(d, '_')) {
		*v = 0;
		return 0;
	}
	long x = 0;
	for (;;) {
		int c = peek(d);
		if (c >= '0' && c <= '9')
			x = x * 36 + (c - '0');
		else if (c >= 'A' && c <= 'Z')
			x = x * 36 + (c - 'A' + 10);
		else
			break;
		if (x > 1000000)
			return fail(d);
		d->p++;
	}
	if (!eat(d, '_'))
		return fail(d);
	*v = x + 1;
	return 0;
}

static int parse_source_name(struct dm *d)
{
	long len;
	if (parse_number(d, &len) < 0 || len <= 0 || len > d->end - d->p)
		return fail(d);
	const char *s = d->p;
	d->p += len;
	if (len >= 10 && !strncmp(s, "_GLOBAL_", 8) &&
	    (s[8] == '.' || s[8] == '_' || s[8] == '$') && s[9] == 'N')
		return mk_text(d, K_NAME, "(anonymous namespace)", 21);
	return mk_text(d, K_NAME, s, (size_t)len);
}

struct opdef {
	char code[3];
	const char *name;
};
static const struct opdef ops[] = {
    {"nw", "new"}, {"na", "new[]"}, {"dl", "delete"}, {"da", "delete[]"}, {"ps", "+"},
    {"ng", "-"},   {"ad", "&"},	    {"de", "*"},      {"co", "~"},	  {"pl", "+"},
    {"mi", "-"},   {"ml", "*"},	    {"dv", "/"},      {"rm", "%"},	  {"an", "&"},
    {"or", "|"},   {"eo", "^"},	    {"aS", "="},      {"pL", "+="},	  {"mI", "-="},
    {"mL", "*="},  {"dV", "/="},    {"rM", "%="},     {"aN", "&="},	  {"oR", "|="},
    {"eO", "^="},  {"ls", "<<"},    {"rs", ">>"},     {"lS", "<<="},	  {"rS", ">>="},
    {"eq", "=="},  {"ne", "!="},    {"lt", "<"},      {"gt", ">"},	  {"le", "<="},
    {"ge", ">="},  {"ss", "<=>"},   {"nt", "!"},      {"aa", "&&"},	  {"oo", "||"},
    {"pp", "++"},  {"mm", "--"},    {"cm", ","},      {"pm", "->*"},	  {"pt", "->"},
    {"cl", "()"},  {"ix", "[]"},    {"qu", "?"},      {"aw", "co_await"},
};

static int parse_operator(struct dm *d)
{
	if (d->end - d->p < 2)
		return fail(d);
	char a = d->p[0], b = d->p[1];
	if (a == 'c' && b == 'v') {
		d->p += 2;
		int t = parse_type(d);
		return mk1(d, K_CONV, t);
	}
	if (a == 'l' && b == 'i') {
		d->p += 2;
		int s = parse_source_name(d);
		if (s < 0)
			return -1;
		int i = mk(d, K_OPERATOR);
		if (i >= 0) {
			/* operator"" _x: the name follows the quotes */
			d->n[i].text = d->n[s].text;
			d->n[i].len = d->n[s].len;
			d->n[i].flags = 1;
		}
		return i;
	}
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (ops[k].code[0] == a && ops[k].code[1] == b) {
			d->p += 2;
			return mk_text(d, K_OPERATOR, ops[k].name, strlen(ops[k].name));
		}
	return fail(d);
}

/* <abi-tags>: B <source-name>, any number. */
static int parse_abi_tags(struct dm *d, int i)
{
	while (i >= 0 && peek(d) == 'B') {
		d->p++;
		int s = parse_source_name(d);
		if (s < 0)
			return -1;
		int t = mk1(d, K_ABI, i);
		if (t >= 0) {
			d->n[t].text = d->n[s].text;
			d->n[t].len = d->n[s].len;
		}
		i = t;
	}
	return i;
}

/* Lambda or unnamed type: U l <params> E [n] _ | U t [n] _ */
static int parse_unnamed(struct dm *d)
{
	d->p++; /* U */
	long num = 0;
	if (eat(d, 't')) {
		if (parse_seq(d, &num) < 0)
			return -1;
		int i = mk(d, K_UNNAMED);
		if (i >= 0)
			d->n[i].num = (uint32_t)num + 1;
		add_sub(d, i); /* c++filt counts unnamed types, not lambdas */
		return i;
	}
	if (!eat(d, 'l'))
		return fail(d);
	int tmp[MAX_LIST], n = 0;
	while (peek(d) != 'E') {
		if (!peek(d) || n >= MAX_LIST)
			return fail(d);
		int t = parse_type(d);
		if (t < 0)
			return -1;
		tmp[n++] = t;
	}
	d->p++;
	if (n == 1 && d->n[tmp[0]].kind == K_NAME && d->n[tmp[0]].len == 4 &&
	    !memcmp(d->n[tmp[0]].text, "void", 4))
		n = 0;
	if (parse_seq(d, &num) < 0)
		return -1;
	int i = mk(d, K_LAMBDA);
	if (i >= 0)
		d->n[i].num = (uint32_t)num + 1;
	return set_list(d, i, tmp, n);
}

/* <unqualified-name>; SCOPE is the prefix (for constructors), or -1. */
static int parse_unqualified(struct dm *d, int scope)
{
	int c = peek(d), i;
	if (c == 'L' && peek2(d) >= '0' && peek2(d) <= '9') {
		/* internal linkage (a static function): nothing shows */
		d->p++;
		c = peek(d);
	}
	if (c >= '0' && c <= '9') {
		i = parse_source_name(d);
	} else if (c == 'C' || (c == 'D' && peek2(d) >= '0' && peek2(d) <= '9')) {
		if (scope < 0)
			return fail(d);
		d->p++;
		int inh = c == 'C' && eat(d, 'I');
		if (peek(d) < '0' || peek(d) > '9')
			return fail(d);
		d->p++;
		int base = inh ? parse_type(d) : -1;
		if (inh && base < 0)
			return -1;
		/* an inheriting constructor is named after the base it
		 * inherits from, as c++filt shows it */
		i = mk1(d, K_CTOR, inh ? base : scope);
		if (i >= 0 && c == 'D')
			d->n[i].flags = FL_DTOR;
	} else if (c == 'U') {
		i = parse_unnamed(d);
	} else if (c == 'D' && peek2(d) == 'C') {
		return fail(d); /* structured bindings */
	} else if (c >= 'a' && c <= 'z') {
		i = parse_operator(d);
	} else {
		return fail(d);
	}
	return parse_abi_tags(d, i);
}

/* The standard abbreviations: the simple form, c++filt's (always the
 * long one), and the constructor's name. */
static const struct {
	char c;
	const char *simple, *full, *ctor_name;
} std_abbrev[] = {
    {'a', "std::allocator", "std::allocator", "allocator"},
    {'b', "std::basic_string", "std::basic_string", "basic_string"},
    {'s', "std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
     "basic_string"},
    {'i', "std::istream", "std::basic_istream<char, std::char_traits<char> >", "basic_istream"},
    {'o', "std::ostream", "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream"},
    {'d', "std::iostream", "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream"},
};

static int std_sub(struct dm *d, int c, int ctor)
{
	for (size_t k = 0; k < sizeof(std_abbrev) / sizeof(std_abbrev[0]); k++)
		if (std_abbrev[k].c == c) {
			const char *cn = std_abbrev[k].ctor_name;
			int i = mk_text(d, K_STDSUB, std_abbrev[k].simple,
					strlen(std_abbrev[k].simple));
			if (i >= 0) {
				d->n[i].flags = (uint8_t)ctor;
				/* the constructor's name, and the simple form */
				d->n[i].b = mk_text(d, K_NAME, cn, strlen(cn));
				d->n[i].num = (uint32_t)k;
			}
			return i;
		}
	return fail(d);
}

/* S...: a substitution or a standard abbreviation (not St). *STD: the
 * node is an abbreviation (not itself added to the table). */
static int parse_substitution(struct dm *d, int *std)
{
	d->p++; /* S */
	*std = 0;
	int c = peek(d);
	if (c >= 'a' && c <= 'z') {
		d->p++;
		*std = 1;
		/* the long form when a constructor or destructor follows */
		int ctor = peek(d) == 'C' || peek(d) == 'D'; /* as c++filt decides */
		return std_sub(d, c, ctor);
	}
	long v;
	if (parse_seq(d, &v) < 0)
		return -1;
	if (v >= d->nsubs)
		return fail(d);
	return d->subs[v];
}

/* T_ / T<n>_: the enclosing template's argument. */
static int parse_template_param(struct dm *d)
{
	d->p++; /* T */
	long v;
	if (parse_seq(d, &v) < 0)
		return -1;
	if (d->tmpl < 0)
		return fail(d);
	const struct node *t = &d->n[d->tmpl];
	if (v >= t->nlist)
		return fail(d);
	return d->lists[t->list + v];
}

static int parse_nested_name(struct dm *d, int *is_tmpl_fn)
{
	d->p++; /* N */
	uint8_t cv = 0, ref = 0;
	while (1) {
		if (eat(d, 'r'))
			cv |= CV_RESTRICT;
		else if (eat(d, 'V'))
			cv |= CV_VOLATILE;
		else if (eat(d, 'K'))
			cv |= CV_CONST;
		else
			break;
	}
	if (eat(d, 'R'))
		ref = 1;
	else if (eat(d, 'O'))
		ref = 2;
	int cur = -1, last_tmpl = 0;
	while (peek(d) != 'E') {
		int c = peek(d), comp;
		last_tmpl = 0;
		if (!c)
			return fail(d);
		if (c == 'S' && peek2(d) == 't' && cur < 0) {
			d->p += 2;
			comp = mk_text(d, K_NAME, "std", 3);
			cur = comp;
			continue; /* std:: is no candidate */
		}
		if (c == 'S') {
			int std;
			comp = parse_substitution(d, &std);
			if (comp < 0)
				return -1;
			if (cur >= 0)
				return fail(d);
			cur = comp;
			continue;
		}
		if (c == 'T') {
			comp = parse_template_param(d);
			if (comp < 0 || cur >= 0)
				return fail(d);
			cur = comp;
			add_sub(d, cur);
			continue;
		}
		if (c == 'I') {
			if (cur < 0)
				return fail(d);
			cur = parse_template_args(d, cur);
			if (cur < 0)
				return -1;
			last_tmpl = 1;
			if (peek(d) != 'E')
				add_sub(d, cur);
			continue;
		}
		if (c == 'D' && (peek2(d) == 't' || peek2(d) == 'T')) {
			if (cur >= 0)
				return fail(d);
			cur = parse_type(d); /* a decltype prefix (added as a type) */
			if (cur < 0)
				return -1;
			continue;
		}
		if (c == 'M') { /* closure's data member initializer scope */
			d->p++;
			continue;
		}
		comp = parse_unqualified(d, cur);
		if (comp < 0)
			return -1;
		cur = cur < 0 ? comp : mk2(d, K_NESTED, cur, comp);
		if (peek(d) != 'E')
			add_sub(d, cur);
	}
	d->p++;
	if (cur < 0)
		return fail(d);
	if (is_tmpl_fn) {
		/* a template function, unless a constructor or conversion */
		int tail = last_tmpl ? d->n[cur].a : cur;
		if (tail >= 0 && d->n[tail].kind == K_NESTED)
			tail = d->n[tail].b;
		*is_tmpl_fn = last_tmpl && tail >= 0 && d->n[tail].kind != K_CTOR &&
			      d->n[tail].kind != K_CONV;
	}
	/* cv and ref qualify the function (parse_encoding reads them) */
	d->name_cv = cv;
	d->name_ref = ref;
	return cur;
}

/* Z <encoding> E <entity> [<discriminator>] */
static int parse_local_name(struct dm *d, int *is_tmpl_fn)
{
	d->p++; /* Z */
	int saved = d->tmpl;
	int enc = parse_encoding(d, 0);
	d->tmpl = saved;
	if (enc < 0 || !eat(d, 'E'))
		return fail(d);
	int ent;
	if (eat(d, 's')) {
		ent = mk_text(d, K_NAME, "string literal", 14);
		if (eat(d, '_')) { /* discriminator */
			long v;
			if (eat(d, '_')) {
				if (parse_number(d, &v) < 0 || !eat(d, '_'))
					return -1;
			} else if (parse_number(d, &v) < 0)
				return -1;
		}
		return mk2(d, K_LOCAL, enc, ent);
	}
	if (eat(d, 'd')) { /* default argument scope */
		long v;
		if (peek(d) != '_' && parse_number(d, &v) < 0)
			return -1;
		if (!eat(d, '_'))
			return fail(d);
	}
	ent = parse_name(d, is_tmpl_fn);
	if (ent < 0)
		return -1;
	if (eat(d, '_')) {
		long v;
		if (eat(d, '_')) {
			if (parse_number(d, &v) < 0 || !eat(d, '_'))
				return -1;
		} else if (parse_number(d, &v) < 0)
			return -1;
	}
	return mk2(d, K_LOCAL, enc, ent);
}

static int parse_name(struct dm *d, int *is_tmpl_fn)
{
	int c = peek(d);
	if (is_tmpl_fn)
		*is_tmpl_fn = 0;
	d->name_cv = d->name_ref = 0;
	if (c == 'N')
		return parse_nested_name(d, is_tmpl_fn);
	if (c == 'Z')
		return parse_local_name(d, is_tmpl_fn);
	int i;
	if (c == 'S' && peek2(d) == 't') {
		d->p += 2;
		int u = parse_unqualified(d, -1);
		i = mk2(d, K_NESTED, mk_text(d, K_NAME, "std", 3), u);
	} else if (c == 'S') {
		int std;
		i = parse_substitution(d, &std);
		if (i < 0)
			return -1;
		if (peek(d) != 'I')
			return fail(d); /* a substitution must be a template here */
		i = parse_template_args(d, i);
		if (is_tmpl_fn)
			*is_tmpl_fn = 1;
		return i;
	} else {
		i = parse_unqualified(d, -1);
	}
	if (i < 0)
		return -1;
	if (peek(d) == 'I') {
		add_sub(d, i); /* <unscoped-template-name> */
		i = parse_template_args(d, i);
		if (is_tmpl_fn)
			*is_tmpl_fn = 1;
	}
	return i;
}

/* L <type> <value> E | L _Z <encoding> E | L <mangled-name> E */
static int parse_literal(struct dm *d)
{
	d->p++; /* L */
	if (peek(d) == '_' && peek2(d) == 'Z') {
		d->p += 2;
		int saved = d->tmpl;
		int e = parse_encoding(d, 0);
		d->tmpl = saved;
		if (e < 0 || !eat(d, 'E'))
			return fail(d);
		return e;
	}
	if (peek(d) == 'Z') { /* g++ 4 wrote L Z ... E */
		d->p++;
		int saved = d->tmpl;
		int e = parse_encoding(d, 0);
		d->tmpl = saved;
		if (e < 0 || !eat(d, 'E'))
			return fail(d);
		return e;
	}
	int t = parse_type(d);
	if (t < 0)
		return -1;
	int neg = eat(d, 'n');
	const char *v = d->p;
	while (peek(d) && peek(d) != 'E')
		d->p++;
	if (!eat(d, 'E'))
		return fail(d);
	int i = mk1(d, K_LITERAL, t);
	if (i >= 0) {
		d->n[i].text = v;
		d->n[i].len = (uint32_t)(d->p - 1 - v);
		d->n[i].flags = neg ? FL_NEG : 0;
	}
	return i;
}

/* ---- expressions -------------------------------------------------------- */
/*
 * Expressions (template arguments X...E, decltype types) are read so that
 * the substitutions they hold are counted as c++filt counts them, and
 * kept as one K_EXPR node, which prints nothing: a name that must show
 * one is refused in the full style, while the simple style, which shows
 * no template argument, parameter or return type, still reads the rest
 * (std::map::insert's enable_if<...> return type).
 */
static int parse_expr(struct dm *d);

/* Expressions up to 'E' (eaten). */
static int parse_exprs_to_e(struct dm *d)
{
	while (!eat(d, 'E')) {
		if (!peek(d) || parse_expr(d) < 0)
			return fail(d);
	}
	return 0;
}

/* <base-unresolved-name>: <source-name> [args] | on <operator> [args] |
 * dn <destructor>. */
static int parse_base_unresolved(struct dm *d)
{
	int n;
	if (peek(d) == 'o' && peek2(d) == 'n') {
		d->p += 2;
		n = parse_operator(d);
	} else if (peek(d) == 'd' && peek2(d) == 'n') {
		d->p += 2;
		n = peek(d) >= '0' && peek(d) <= '9' ? parse_source_name(d) : parse_type(d);
	} else {
		n = parse_source_name(d);
	}
	if (n >= 0 && peek(d) == 'I')
		n = parse_template_args(d, n);
	return n;
}

/* [gs] sr ...: the unresolved names of dependent expressions. */
static int parse_unresolved(struct dm *d)
{
	d->p += 2; /* sr */
	/* As c++filt reads it: a type, then the name (gcc's form); else the
	 * qualifiers up to 'E', then the name (clang's sr3std...E5value). */
	const char *at = d->p;
	int nsubs = d->nsubs, nn = d->nn, depth = d->depth;
	if (parse_type(d) >= 0 && parse_base_unresolved(d) >= 0 &&
	    !(peek(d) == 'E' && peek2(d) >= '0' && peek2(d) <= '9'))
		return 0;
	d->p = at;
	d->nsubs = nsubs;
	d->nn = nn;
	d->depth = depth;
	d->bad = 0;
	if (peek(d) < '0' || peek(d) > '9')
		return fail(d);
	while (!eat(d, 'E'))
		if (!peek(d) || parse_base_unresolved(d) < 0)
			return fail(d);
	return parse_base_unresolved(d);
}

/* fp [cv] [n] _ | fL n p [cv] [n] _ */
static int parse_function_param(struct dm *d)
{
	d->p++; /* f */
	if (eat(d, 'L')) {
		long v;
		if (parse_number(d, &v) < 0)
			return -1;
	}
	if (!eat(d, 'p'))
		return fail(d);
	while (eat(d, 'r') || eat(d, 'V') || eat(d, 'K'))
		;
	while (peek(d) >= '0' && peek(d) <= '9')
		d->p++;
	return eat(d, '_') ? 0 : fail(d);
}

static const char unary_ops[][3] = {"ps", "ng", "ad", "de", "co", "nt", "pp",
				    "mm", "sz", "az", "nx", "te", "tw", "sp"};
static const char binary_ops[][3] = {"pl", "mi", "ml", "dv", "rm", "an", "or", "eo", "aS",
				     "pL", "mI", "mL", "dV", "rM", "aN", "oR", "eO", "ls",
				     "rs", "lS", "rS", "eq", "ne", "lt", "gt", "le", "ge",
				     "ss", "aa", "oo", "cm", "pm", "ix", "ds"};

static int parse_expr(struct dm *d)
{
	int c = peek(d), c2 = peek2(d);
	if (++d->depth > MAX_DEPTH)
		return fail(d);
	int r = 0;
	if (c == 'L') {
		r = parse_literal(d);
	} else if (c == 'T') {
		r = parse_template_param(d);
		if (r >= 0 && peek(d) == 'I')
			r = parse_template_args(d, r);
	} else if (c == 'f' && (c2 == 'p' || c2 == 'L')) {
		r = parse_function_param(d);
	} else if (c == 'g' && c2 == 's') {
		d->p += 2;
		r = parse_expr(d);
	} else if (c == 's' && c2 == 'r') {
		r = parse_unresolved(d);
	} else if ((c == 'd' || c == 'p') && c2 == 't') {
		d->p += 2;
		r = parse_expr(d) < 0 ? -1 : parse_base_unresolved(d);
	} else if (c == 's' && c2 == 'Z') {
		d->p += 2;
		r = peek(d) == 'T' ? parse_template_param(d) : parse_function_param(d);
	} else if (c == 's' && c2 == 'P') {
		d->p += 2;
		while (!eat(d, 'E'))
			if (!peek(d) || parse_template_arg(d) < 0)
				return fail(d);
	} else if ((c == 'c' && c2 == 'l') || (c == 'i' && c2 == 'l')) {
		d->p += 2;
		r = parse_exprs_to_e(d);
	} else if (c == 'c' && c2 == 'v') {
		d->p += 2;
		if (parse_type(d) < 0)
			return -1;
		r = eat(d, '_') ? parse_exprs_to_e(d) : parse_expr(d);
	} else if (c == 't' && c2 == 'l') {
		d->p += 2;
		r = parse_type(d) < 0 ? -1 : parse_exprs_to_e(d);
	} else if ((c == 's' && c2 == 't') || (c == 'a' && c2 == 't') || (c == 't' && c2 == 'i')) {
		d->p += 2;
		r = parse_type(d);
	} else if ((c == 'd' || c == 's' || c == 'c' || c == 'r') && c2 == 'c') {
		d->p += 2;
		r = parse_type(d) < 0 ? -1 : parse_expr(d);
	} else if (c == 'o' && c2 == 'n') {
		r = parse_base_unresolved(d);
	} else if (c == 'd' && c2 == 'n') {
		r = parse_base_unresolved(d);
	} else if (c == 't' && c2 == 'r') {
		d->p += 2;
	} else if (c == 'q' && c2 == 'u') {
		d->p += 2;
		for (int k = 0; k < 3 && r >= 0; k++)
			r = parse_expr(d);
	} else if (c >= '0' && c <= '9') {
		r = parse_base_unresolved(d);
	} else {
		size_t k;
		for (k = 0; k < sizeof(unary_ops) / sizeof(unary_ops[0]); k++)
			if (c == unary_ops[k][0] && c2 == unary_ops[k][1])
				break;
		if (k < sizeof(unary_ops) / sizeof(unary_ops[0])) {
			d->p += 2;
			if ((c == 'p' || c == 'm') && peek(d) == '_') /* prefix ++/-- */
				d->p++;
			r = parse_expr(d);
		} else {
			for (k = 0; k < sizeof(binary_ops) / sizeof(binary_ops[0]); k++)
				if (c == binary_ops[k][0] && c2 == binary_ops[k][1])
					break;
			if (k == sizeof(binary_ops) / sizeof(binary_ops[0]))
				return fail(d); /* new, delete, folds, vendor: not handled */
			d->p += 2;
			r = parse_expr(d) < 0 ? -1 : parse_expr(d);
		}
	}
	d->depth--;
	return r < 0 ? -1 : mk(d, K_EXPR);
}

static int parse_template_arg(struct dm *d)
{
	int c = peek(d);
	if (c == 'L')
		return parse_literal(d);
	if (c == 'X') {
		d->p++;
		int e = parse_expr(d);
		return e < 0 || !eat(d, 'E') ? fail(d) : e;
	}
	if (c == 'J') {
		d->p++;
		int tmp[MAX_LIST], n = 0;
		while (peek(d) != 'E') {
			if (!peek(d) || n >= MAX_LIST)
				return fail(d);
			int a = parse_template_arg(d);
			if (a < 0)
				return -1;
			tmp[n++] = a;
		}
		d->p++;
		return set_list(d, mk(d, K_ARGPACK), tmp, n);
	}
	return parse_type(d);
}

static int parse_template_args(struct dm *d, int name)
{
	d->p++; /* I */
	if (++d->depth > MAX_DEPTH)
		return fail(d);
	int tmp[MAX_LIST], n = 0;
	while (peek(d) != 'E') {
		if (!peek(d) || n >= MAX_LIST)
			return fail(d);
		int a = parse_template_arg(d);
		if (a < 0)
			return -1;
		tmp[n++] = a;
	}
	d->p++;
	d->depth--;
	int i = set_list(d, mk1(d, K_TEMPLATE, name), tmp, n);
	return i;
}

static int parse_function_type(struct dm *d)
{
	d->p++; /* F */
	eat(d, 'Y');
	int ret = parse_type(d);
	if (ret < 0)
		return -1;
	int tmp[MAX_LIST], n = 0;
	uint8_t ref = 0;
	while (peek(d) != 'E') {
		if (peek(d) == 'R' && peek2(d) == 'E') {
			d->p++;
			ref = 1;
			continue;
		}
		if (peek(d) == 'O' && peek2(d) == 'E') {
			d->p++;
			ref = 2;
			continue;
		}
		if (!peek(d) || n >= MAX_LIST)
			return fail(d);
		int t = parse_type(d);
		if (t < 0)
			return -1;
		tmp[n++] = t;
	}
	d->p++;
	if (n == 1 && d->n[tmp[0]].kind == K_NAME && d->n[tmp[0]].len == 4 &&
	    !memcmp(d->n[tmp[0]].text, "void", 4))
		n = 0;
	int i = set_list(d, mk1(d, K_FUNC, ret), tmp, n);
	if (i >= 0)
		d->n[i].ref = ref;
	return i;
}

struct builtin {
	char c;
	const char *name;
};
static const struct builtin builtins[] = {
    {'v', "void"},	  {'w', "wchar_t"},
    {'b', "bool"},	  {'c', "char"},
    {'a', "signed char"}, {'h', "unsigned char"},
    {'s', "short"},	  {'t', "unsigned short"},
    {'i', "int"},	  {'j', "unsigned int"},
    {'l', "long"},	  {'m', "unsigned long"},
    {'x', "long long"},	  {'y', "unsigned long long"},
    {'n', "__int128"},	  {'o', "unsigned __int128"},
    {'f', "float"},	  {'d', "double"},
    {'e', "long double"}, {'g', "__float128"},
    {'z', "..."},
};
static const struct builtin dbuiltins[] = {
    {'d', "decimal64"}, {'e', "decimal128"},	 {'f', "decimal32"}, {'h', "half"},
    {'u', "char8_t"},	{'s', "char16_t"},	 {'i', "char32_t"},  {'n', "decltype(nullptr)"},
    {'a', "auto"},	{'c', "decltype(auto)"},
};

static int parse_type(struct dm *d)
{
	int c = peek(d), i;
	if (++d->depth > MAX_DEPTH)
		return fail(d);
	for (size_t k = 0; k < sizeof(builtins) / sizeof(builtins[0]); k++)
		if (builtins[k].c == c) {
			d->p++;
			d->depth--;
			return mk_text(d, K_NAME, builtins[k].name, strlen(builtins[k].name));
		}
	switch (c) {
	case 'r':
	case 'V':
	case 'K': {
		uint8_t cv = 0;
		while (1) {
			if (eat(d, 'r'))
				cv |= CV_RESTRICT;
			else if (eat(d, 'V'))
				cv |= CV_VOLATILE;
			else if (eat(d, 'K'))
				cv |= CV_CONST;
			else
				break;
		}
		int t = parse_type(d);
		if (t < 0)
			return -1;
		if (d->n[t].kind == K_FUNC) {
			/* an abominable function type: its own qualifiers */
			i = mk(d, K_FUNC);
			if (i >= 0) {
				d->n[i] = d->n[t];
				d->n[i].cv = cv;
			}
		} else {
			i = mk1(d, K_QUAL, t);
			if (i >= 0)
				d->n[i].cv = cv;
		}
		add_sub(d, i);
		break;
	}
	case 'P':
	case 'R':
	case 'O':
		d->p++;
		i = mk1(d, c == 'P' ? K_PTR : c == 'R' ? K_LREF : K_RREF, parse_type(d));
		add_sub(d, i);
		break;
	case 'C': /* complex */
	case 'G': /* imaginary */
		d->p++;
		i = mk1(d, K_QUAL, parse_type(d));
		if (i >= 0) {
			d->n[i].text = c == 'C' ? " _Complex" : " _Imaginary";
			d->n[i].len = (uint32_t)strlen(d->n[i].text);
		}
		add_sub(d, i);
		break;
	case 'F':
		i = parse_function_type(d);
		add_sub(d, i);
		break;
	case 'A': {
		d->p++;
		const char *v = d->p;
		while (peek(d) >= '0' && peek(d) <= '9')
			d->p++;
		if (peek(d) != '_')
			return fail(d); /* expression dimensions: not handled */
		size_t len = (size_t)(d->p - v);
		d->p++;
		i = mk1(d, K_ARRAY, parse_type(d));
		if (i >= 0) {
			d->n[i].text = v;
			d->n[i].len = (uint32_t)len;
		}
		add_sub(d, i);
		break;
	}
	case 'M': {
		d->p++;
		int cls = parse_type(d);
		if (cls < 0)
			return -1;
		int mem = parse_type(d);
		i = mk2(d, K_PTRMEM, cls, mem);
		add_sub(d, i);
		break;
	}
	case 'T':
		i = parse_template_param(d);
		if (i < 0)
			return -1;
		add_sub(d, i);
		if (peek(d) == 'I') {
			i = parse_template_args(d, i);
			add_sub(d, i);
		}
		break;
	case 'S': {
		if (peek2(d) == 't') {
			i = parse_name(d, NULL);
			add_sub(d, i);
			break;
		}
		int std;
		i = parse_substitution(d, &std);
		if (i < 0)
			return -1;
		if (peek(d) == 'I') {
			i = parse_template_args(d, i);
			add_sub(d, i);
		}
		break;
	}
	case 'N':
	case 'Z':
	case '0' ... '9':
		i = parse_name(d, NULL);
		add_sub(d, i);
		break;
	case 'U':
		if (peek2(d) == 't' || peek2(d) == 'l') {
			i = parse_name(d, NULL);
			add_sub(d, i);
			break;
		}
		return fail(d); /* vendor qualifiers */
	case 'u': {
		d->p++;
		i = parse_source_name(d);
		add_sub(d, i);
		break;
	}
	case 'D': {
		int c2 = peek2(d);
		if (c2 == 'p') {
			d->p += 2;
			i = mk1(d, K_PACKEXP, parse_type(d));
			add_sub(d, i);
			break;
		}
		if (c2 == 'v') {
			d->p += 2;
			const char *v = d->p;
			while (peek(d) >= '0' && peek(d) <= '9')
				d->p++;
			size_t len = (size_t)(d->p - v);
			if (!len || !eat(d, '_'))
				return fail(d);
			i = mk1(d, K_VECTOR, parse_type(d));
			if (i >= 0) {
				d->n[i].text = v;
				d->n[i].len = (uint32_t)len;
			}
			add_sub(d, i);
			break;
		}
		if (c2 == 'o' || c2 == 'x') { /* noexcept function types */
			d->p += 2;
			if (peek(d) != 'F')
				return fail(d);
			i = parse_function_type(d);
			if (i >= 0)
				d->n[i].flags |= FL_NOEXCEPT;
			add_sub(d, i);
			break;
		}
		if (c2 == 'F') { /* _FloatN */
			d->p += 2;
			const char *v = d->p;
			while (peek(d) >= '0' && peek(d) <= '9')
				d->p++;
			size_t len = (size_t)(d->p - v);
			if (!len || len > 4 || peek(d) != '_')
				return fail(d);
			d->p++;
			static const char *const fl[] = {"_Float16", "_Float32", "_Float64",
							 "_Float128"};
			const char *nm = NULL;
			for (int k = 0; k < 4; k++)
				if (strlen(fl[k]) - 6 == len && !memcmp(fl[k] + 6, v, len))
					nm = fl[k];
			if (!nm)
				return fail(d);
			i = mk_text(d, K_NAME, nm, strlen(nm));
			break;
		}
		for (size_t k = 0; k < sizeof(dbuiltins) / sizeof(dbuiltins[0]); k++)
			if (dbuiltins[k].c == c2) {
				d->p += 2;
				d->depth--;
				return mk_text(d, K_NAME, dbuiltins[k].name,
					       strlen(dbuiltins[k].name));
			}
		if (c2 == 't' || c2 == 'T') { /* decltype: a candidate */
			d->p += 2;
			i = parse_expr(d);
			if (i < 0 || !eat(d, 'E'))
				return fail(d);
			add_sub(d, i);
			break;
		}
		return fail(d); /* the rest */
	}
	default:
		return fail(d);
	}
	d->depth--;
	return i;
}

/* The innermost template of name N (what T_ names in its encoding). */
static int name_template(const struct dm *d, int n)
{
	while (n >= 0) {
		const struct node *x = &d->n[n];
		if (x->kind == K_TEMPLATE)
			return n;
		if (x->kind == K_NESTED || x->kind == K_ABI || x->kind == K_LOCAL)
			n = x->kind == K_NESTED ? x->b : x->kind == K_ABI ? x->a : x->b;
		else
			return -1;
	}
	return -1;
}

static int parse_special(struct dm *d)
{
	int c = peek2(d);
	const char *pre = NULL;
	d->p += 2;
	if (d->p[-2] == 'T') {
		switch (c) {
		case 'V':
			pre = "vtable for ";
			break;
		case 'T':
			pre = "VTT for ";
			break;
		case 'I':
			pre = "typeinfo for ";
			break;
		case 'S':
			pre = "typeinfo name for ";
			break;
		case 'H':
			pre = "TLS init function for ";
			break;
		case 'W':
			pre = "TLS wrapper function for ";
			break;
		case 'h':
		case 'v': {
			long v;
			if (c == 'h') {
				if (parse_number(d, &v) < 0 || !eat(d, '_'))
					return -1;
				pre = "non-virtual thunk to ";
			} else {
				if (parse_number(d, &v) < 0 || !eat(d, '_') ||
				    parse_number(d, &v) < 0 || !eat(d, '_'))
					return -1;
				pre = "virtual thunk to ";
			}
			int e = parse_encoding(d, 0);
			int i = mk1(d, K_SPECIAL, e);
			if (i >= 0) {
				d->n[i].text = pre;
				d->n[i].len = (uint32_t)strlen(pre);
			}
			return i;
		}
		case 'C': {
			int t1 = parse_type(d);
			long v;
			if (t1 < 0 || parse_number(d, &v) < 0 || !eat(d, '_'))
				return fail(d);
			int t2 = parse_type(d);
			return mk2(d, K_CTORVT, t1, t2);
		}
		default:
			return fail(d);
		}
		int t = (c == 'H' || c == 'W') ? parse_name(d, NULL) : parse_type(d);
		int i = mk1(d, K_SPECIAL, t);
		if (i >= 0) {
			d->n[i].text = pre;
			d->n[i].len = (uint32_t)strlen(pre);
		}
		return i;
	}
	/* G */
	if (c == 'V') {
		pre = "guard variable for ";
		int i = mk1(d, K_SPECIAL, parse_name(d, NULL));
		if (i >= 0) {
			d->n[i].text = pre;
			d->n[i].len = (uint32_t)strlen(pre);
		}
		return i;
	}
	if (c == 'R') {
		int nm = parse_name(d, NULL);
		long v = 0;
		if (nm < 0 || parse_seq(d, &v) < 0)
			return fail(d);
		/* "reference temporary #N for " */
		static const char *const rt[] = {
		    "reference temporary #0 for ", "reference temporary #1 for ",
		    "reference temporary #2 for ", "reference temporary #3 for ",
		    "reference temporary #4 for ", "reference temporary #5 for ",
		    "reference temporary #6 for ", "reference temporary #7 for ",
		    "reference temporary #8 for ", "reference temporary #9 for "};
		if (v > 9)
			return fail(d);
		int i = mk1(d, K_SPECIAL, nm);
		if (i >= 0) {
			d->n[i].text = rt[v];
			d->n[i].len = (uint32_t)strlen(rt[v]);
		}
		return i;
	}
	if (c == 'T' && (peek(d) == 't' || peek(d) == 'n')) {
		pre = peek(d) == 't' ? "transaction clone for " : "non-transaction clone for ";
		d->p++;
		int i = mk1(d, K_SPECIAL, parse_encoding(d, 0));
		if (i >= 0) {
			d->n[i].text = pre;
			d->n[i].len = (uint32_t)strlen(pre);
		}
		return i;
	}
	return fail(d);
}

/* <encoding>: a function (name and parameters), data (name) or special
 * name. TOP: the whole symbol, which may end with clone suffixes. */
static int parse_encoding(struct dm *d, int top)
{
	int c = peek(d);
	if (++d->depth > MAX_DEPTH)
		return fail(d);
	if (c == 'T' || (c == 'G' && (peek2(d) == 'V' || peek2(d) == 'R' || peek2(d) == 'T'))) {
		int i = parse_special(d);
		d->depth--;
		return i;
	}
	int tmpl_fn = 0;
	int name = parse_name(d, &tmpl_fn);
	if (name < 0)
		return -1;
	uint8_t cv = d->name_cv, ref = d->name_ref;
	int c2 = peek(d);
	if (!c2 || c2 == 'E' || (top && c2 == '.')) {
		d->depth--;
		return name; /* data */
	}
	int saved = d->tmpl;
	int t = name_template(d, name);
	if (t >= 0)
		d->tmpl = t;
	int ret = -1;
	if (tmpl_fn) {
		ret = parse_type(d);
		if (ret < 0)
			return -1;
	}
	int tmp[MAX_LIST], n = 0;
	while (peek(d) && peek(d) != 'E' && !(top && peek(d) == '.')) {
		if (n >= MAX_LIST)
			return fail(d);
		int p = parse_type(d);
		if (p < 0)
			return -1;
		tmp[n++] = p;
	}
	if (!n)
		return fail(d);
	if (n == 1 && d->n[tmp[0]].kind == K_NAME && d->n[tmp[0]].len == 4 &&
	    !memcmp(d->n[tmp[0]].text, "void", 4))
		n = 0;
	d->tmpl = saved;
	int i = mk2(d, K_ENCODING, name, name);
	if (i >= 0) {
		d->n[i].b = ret;
		d->n[i].cv = cv;
		d->n[i].ref = ref;
	}
	d->depth--;
	return set_list(d, i, tmp, n);
}

/* ---- printing ----------------------------------------------------------- */

static void put(struct dm *d, const char *s, size_t n)
{
	if (d->len + n + 1 > d->size) {
		d->bad = 2;
		return;
	}
	memcpy(d->out + d->len, s, n);
	d->len += n;
	d->out[d->len] = 0;
	if (n)
		d->last_fake = 0;
}

static void puts_(struct dm *d, const char *s)
{
	put(d, s, strlen(s));
}

static char last(const struct dm *d)
{
	if (d->last_fake)
		return d->last_fake;
	return d->len ? d->out[d->len - 1] : 0;
}

static void print(struct dm *d, int i);
static void print_left(struct dm *d, int i);
static void print_right(struct dm *d, int i);

/* What node I stands for: an argument pack's element while one expands. */
static int resolve(const struct dm *d, int i)
{
	while (i >= 0 && i == d->pack_node && d->pack_i >= 0) {
		const struct node *x = &d->n[i];
		if (d->pack_i >= x->nlist)
			return -1;
		i = d->lists[x->list + d->pack_i];
	}
	return i;
}

/* Is I (under its qualifiers) a function type / an array type? */
static int is_func(const struct dm *d, int i)
{
	i = resolve(d, i);
	while (i >= 0 && d->n[i].kind == K_QUAL && !d->n[i].text)
		i = resolve(d, d->n[i].a);
	return i >= 0 && d->n[i].kind == K_FUNC;
}

static int is_array(const struct dm *d, int i)
{
	i = resolve(d, i);
	while (i >= 0 && d->n[i].kind == K_QUAL && !d->n[i].text)
		i = resolve(d, d->n[i].a);
	return i >= 0 && d->n[i].kind == K_ARRAY;
}

/* Does node I print a right part (a declarator around it)? */
static int has_right(const struct dm *d, int i)
{
	i = resolve(d, i);
	if (i < 0)
		return 0;
	const struct node *x = &d->n[i];
	switch (x->kind) {
	case K_FUNC:
	case K_ARRAY:
		return 1;
	case K_PTR:
	case K_LREF:
	case K_RREF:
	case K_QUAL:
		return has_right(d, x->a);
	case K_PTRMEM:
		return 1;
	default:
		return 0;
	}
}

static void print_cv(struct dm *d, uint8_t cv)
{
	if (cv & CV_CONST)
		puts_(d, " const");
	if (cv & CV_VOLATILE)
		puts_(d, " volatile");
	if (cv & CV_RESTRICT)
		puts_(d, " restrict");
}

/* The elements of a list, comma-separated; packs expand in place. */
static void print_list(struct dm *d, int list, int n)
{
	int first = 1;
	for (int k = 0; k < n; k++) {
		int e = resolve(d, d->lists[list + k]);
		if (e < 0)
			continue;
		if (d->n[e].kind == K_ARGPACK) {
			const struct node *x = &d->n[e];
			if (!x->nlist) {
				/* c++filt writes ", " and takes it back, but
				 * still believes a space came last */
				if (!first)
					d->last_fake = ' ';
				continue;
			}
			size_t before = d->len;
			if (!first)
				puts_(d, ", ");
			size_t mark = d->len;
			print_list(d, x->list, x->nlist);
			if (d->len == mark) { /* its elements printed nothing */
				d->len = before;
				d->out[d->len] = 0;
				if (!first)
					d->last_fake = ' ';
			} else {
				first = 0;
			}
			continue;
		}
		size_t before = d->len;
		if (!first)
			puts_(d, ", ");
		size_t mark = d->len;
		print(d, e);
		if (d->len == mark) { /* an empty pack expansion */
			d->len = before;
			d->out[d->len] = 0;
			if (!first)
				d->last_fake = ' ';
		} else {
			first = 0;
		}
	}
}

/* The argument pack inside node I (-1: none). */
static int pack_find(const struct dm *d, int i, int depth)
{
	if (i < 0 || depth > 64)
		return -1;
	const struct node *x = &d->n[i];
	if (x->kind == K_ARGPACK)
		return i;
	int r = -1;
	if (x->kind != K_PACKEXP) {
		if (x->a >= 0 && x->kind != K_CTOR)
			r = pack_find(d, x->a, depth + 1);
		if (r < 0 && x->b >= 0 && x->kind != K_STDSUB)
			r = pack_find(d, x->b, depth + 1);
		for (int k = 0; r < 0 && x->list >= 0 && k < x->nlist; k++)
			r = pack_find(d, d->lists[x->list + k], depth + 1);
	}
	return r;
}

/* The last unqualified name of N, for a constructor. */
static void print_ctor_name(struct dm *d, int n)
{
	n = resolve(d, n);
	while (n >= 0) {
		const struct node *x = &d->n[n];
		if (x->kind == K_NESTED) {
			/* c++filt names an unnamed class's destructor after the
			 * enclosing class */
			int b = resolve(d, x->b);
			n = b >= 0 && (d->n[b].kind == K_UNNAMED || d->n[b].kind == K_LAMBDA)
				? x->a
				: x->b;
		} else if (x->kind == K_TEMPLATE || x->kind == K_ABI)
			n = x->a;
		else if (x->kind == K_STDSUB) {
			print(d, x->b);
			return;
		} else {
			print(d, n);
			return;
		}
	}
}

static void print_left(struct dm *d, int i)
{
	i = resolve(d, i);
	if (i < 0)
		return;
	const struct node *x = &d->n[i];
	switch (x->kind) {
	case K_PTR:
	case K_LREF:
	case K_RREF: {
		/* reference collapsing: T& & and T&& & are T&, T&& && is T&& */
		int c = resolve(d, x->a);
		uint8_t k = x->kind;
		while (k != K_PTR && c >= 0 && (d->n[c].kind == K_LREF || d->n[c].kind == K_RREF)) {
			if (d->n[c].kind == K_LREF)
				k = K_LREF;
			c = resolve(d, d->n[c].a);
		}
		print_left(d, c);
		if (is_array(d, c))
			puts_(d, " ");
		if (is_array(d, c) || is_func(d, c))
			puts_(d, "(");
		puts_(d, k == K_PTR ? "*" : k == K_LREF ? "&" : "&&");
		break;
	}
	case K_QUAL: {
		if (x->text) {
			print_left(d, x->a);
			put(d, x->text, x->len);
			break;
		}
		/* T const with T = int const: one const */
		uint8_t cv = x->cv;
		int c = resolve(d, x->a);
		while (c >= 0 && d->n[c].kind == K_QUAL && !d->n[c].text) {
			cv |= d->n[c].cv;
			c = resolve(d, d->n[c].a);
		}
		print_left(d, c);
		print_cv(d, cv);
		break;
	}
	case K_FUNC:
		/* c++filt's space after a return type, unless the declarator
		 * nests inside it (a function returning a function pointer) */
		print_left(d, x->a);
		if (!has_right(d, x->a))
			puts_(d, " ");
		break;
	case K_ARRAY:
		print_left(d, x->a);
		break;
	case K_PTRMEM:
		print_left(d, x->b);
		if (is_func(d, x->b)) {
			puts_(d, "(");
		} else {
			puts_(d, " ");
		}
		print(d, x->a);
		puts_(d, "::*");
		break;
	default:
		print(d, i);
		break;
	}
}

static void print_right(struct dm *d, int i)
{
	i = resolve(d, i);
	if (i < 0)
		return;
	const struct node *x = &d->n[i];
	switch (x->kind) {
	case K_PTR:
	case K_LREF:
	case K_RREF: {
		int c = resolve(d, x->a);
		while (x->kind != K_PTR && c >= 0 &&
		       (d->n[c].kind == K_LREF || d->n[c].kind == K_RREF))
			c = resolve(d, d->n[c].a);
		if (is_array(d, c) || is_func(d, c))
			puts_(d, ")");
		print_right(d, c);
		break;
	}
	case K_QUAL:
		print_right(d, x->a);
		break;
	case K_FUNC:
		puts_(d, "(");
		print_list(d, x->list, x->nlist);
		puts_(d, ")");
		print_right(d, x->a);
		print_cv(d, x->cv);
		if (x->ref)
			puts_(d, x->ref == 1 ? " &" : " &&");
		if (x->flags & FL_NOEXCEPT)
			puts_(d, " noexcept");
		break;
	case K_ARRAY:
		if (last(d) != ']')
			puts_(d, " ");
		puts_(d, "[");
		put(d, x->text, x->len);
		puts_(d, "]");
		print_right(d, x->a);
		break;
	case K_PTRMEM:
		if (is_func(d, x->b))
			puts_(d, ")");
		print_right(d, x->b);
		break;
	default:
		break;
	}
}

static void print_literal(struct dm *d, const struct node *x)
{
	const struct node *t = &d->n[x->a];
	static const struct {
		const char *type, *suffix;
	} sfx[] = {{"int", ""},		{"unsigned int", "u"},
		   {"long", "l"},	{"unsigned long", "ul"},
		   {"long long", "ll"}, {"unsigned long long", "ull"}};
	if (t->kind == K_NAME) {
		if (t->len == 4 && !memcmp(t->text, "bool", 4) && !(x->flags & FL_NEG) &&
		    x->len == 1 && (x->text[0] == '0' || x->text[0] == '1')) {
			puts_(d, x->text[0] == '1' ? "true" : "false");
			return;
		}
		if (!strncmp(t->text, "decltype(nullptr)", t->len) && t->len == 17 && !x->len) {
			puts_(d, "decltype(nullptr)");
			return;
		}
		for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++)
			if (strlen(sfx[k].type) == t->len &&
			    !memcmp(sfx[k].type, t->text, t->len)) {
				if (x->flags & FL_NEG)
					puts_(d, "-");
				put(d, x->text, x->len);
				puts_(d, sfx[k].suffix);
				return;
			}
	}
	puts_(d, "(");
	print(d, x->a);
	puts_(d, ")");
	if (x->flags & FL_NEG)
		puts_(d, "-");
	put(d, x->text, x->len);
}

static void print_num(struct dm *d, uint32_t v)
{
	char b[16];
	int k = 15;
	b[k] = 0;
	do {
		b[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k > 0);
	puts_(d, b + k);
}

static void print(struct dm *d, int i)
{
	i = resolve(d, i);
	if (i < 0 || d->bad)
		return;
	const struct node *x = &d->n[i];
	switch (x->kind) {
	case K_NAME:
		put(d, x->text, x->len);
		break;
	case K_STDSUB:
		/* c++filt always shows the long form; simple: the short one,
		 * and "std::basic_string" for a constructor's class */
		if (!d->simple)
			puts_(d, std_abbrev[x->num].full);
		else if (x->flags) {
			puts_(d, "std::");
			print(d, x->b);
		} else {
			put(d, x->text, x->len);
		}
		break;
	case K_NESTED:
		print(d, x->a);
		puts_(d, "::");
		print(d, x->b);
		break;
	case K_TEMPLATE:
		print(d, x->a);
		if (d->simple)
			break;
		if (last(d) == '<')
			puts_(d, " ");
		puts_(d, "<");
		print_list(d, x->list, x->nlist);
		if (last(d) == '>')
			puts_(d, " ");
		puts_(d, ">");
		break;
	case K_CTOR:
		if (x->flags & FL_DTOR)
			puts_(d, "~");
		print_ctor_name(d, x->a);
		break;
	case K_ABI:
		print(d, x->a);
		if (d->simple)
			break;
		puts_(d, "[abi:");
		put(d, x->text, x->len);
		puts_(d, "]");
		break;
	case K_LOCAL:
		d->no_ret = 1; /* c++filt shows no return type there */
		print(d, x->a);
		d->no_ret = 0;
		puts_(d, "::");
		print(d, x->b);
		break;
	case K_LAMBDA:
		puts_(d, "{lambda(");
		if (!d->simple)
			print_list(d, x->list, x->nlist);
		puts_(d, ")#");
		print_num(d, x->num);
		puts_(d, "}");
		break;
	case K_UNNAMED:
		puts_(d, "{unnamed type#");
		print_num(d, x->num);
		puts_(d, "}");
		break;
	case K_OPERATOR:
		if (x->flags) {
			puts_(d, "operator\"\" ");
			put(d, x->text, x->len);
		} else {
			puts_(d, "operator");
			if (x->text[0] >= 'a' && x->text[0] <= 'z')
				puts_(d, " ");
			put(d, x->text, x->len);
		}
		break;
	case K_CONV:
		puts_(d, "operator ");
		print(d, x->a);
		break;
	case K_SPECIAL:
		put(d, x->text, x->len);
		print(d, x->a);
		break;
	case K_CTORVT:
		puts_(d, "construction vtable for ");
		print(d, x->b);
		puts_(d, "-in-");
		print(d, x->a);
		break;
	case K_LITERAL:
		print_literal(d, x);
		break;
	case K_EXPR:
		d->bad = 3; /* not printed: the name is refused in this style */
		break;
	case K_ARGPACK:
		print_list(d, x->list, x->nlist);
		break;
	case K_PACKEXP: {
		int pk = pack_find(d, x->a, 0);
		int n = pk >= 0 ? d->n[pk].nlist : -1;
		if (n < 0) {
			/* no pack inside: c++filt shows the pattern so */
			puts_(d, "(");
			print(d, x->a);
			puts_(d, ")...");
			break;
		}
		int saved = d->pack_i, saved_node = d->pack_node;
		for (int k = 0; k < n; k++) {
			if (k)
				puts_(d, ", ");
			d->pack_i = k;
			d->pack_node = pk;
			print(d, x->a);
		}
		d->pack_i = saved;
		d->pack_node = saved_node;
		break;
	}
	case K_VECTOR:
		print(d, x->a);
		puts_(d, " __vector(");
		put(d, x->text, x->len);
		puts_(d, ")");
		break;
	case K_ENCODING: {
		int ret = d->no_ret ? -1 : x->b;
		d->no_ret = 0;
		if (d->simple) {
			print(d, x->a);
			break;
		}
		if (ret >= 0) {
			print_left(d, ret);
			if (!has_right(d, ret))
				puts_(d, " ");
		}
		print(d, x->a);
		puts_(d, "(");
		print_list(d, x->list, x->nlist);
		puts_(d, ")");
		if (ret >= 0)
			print_right(d, ret);
		print_cv(d, x->cv);
		if (x->ref)
			puts_(d, x->ref == 1 ? " &" : " &&");
		break;
	}
	case K_CLONE:
		print(d, x->a);
		if (d->simple)
			break;
		puts_(d, " [clone ");
		put(d, x->text, x->len);
		puts_(d, "]");
		break;
	default: /* types */
		print_left(d, i);
		print_right(d, i);
		break;
	}
}

/* ---- entry -------------------------------------------------------------- */

/* Clone suffixes: ".cold", ".constprop.0", ".isra.0.cold" (each ".word"
 * and its ".number"s one [clone ...]). */
static int parse_clones(struct dm *d, int i)
{
	while (i >= 0 && peek(d) == '.') {
		const char *s = d->p;
		int c2 = peek2(d);
		if (!((c2 >= 'a' && c2 <= 'z') || c2 == '_' || (c2 >= '0' && c2 <= '9')))
			return fail(d);
		d->p++;
		while ((peek(d) >= 'a' && peek(d) <= 'z') || peek(d) == '_' ||
		       (peek(d) >= '0' && peek(d) <= '9' && c2 >= '0' && c2 <= '9'))
			d->p++;
		while (peek(d) == '.' && peek2(d) >= '0' && peek2(d) <= '9') {
			d->p++;
			while (peek(d) >= '0' && peek(d) <= '9')
				d->p++;
		}
		int c = mk1(d, K_CLONE, i);
		if (c >= 0) {
			d->n[c].text = s;
			d->n[c].len = (uint32_t)(d->p - s);
		}
		i = c;
	}
	return i;
}

int dft_demangle(const char *mangled, enum dm_style style, char *out, size_t size)
{
	if (!mangled || strncmp(mangled, "_Z", 2) || !size)
		return -EINVAL;
	struct dm *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ncap = 64;
	d->n = malloc((size_t)d->ncap * sizeof(*d->n));
	if (!d->n) {
		free(d);
		return -ENOMEM;
	}
	d->p = mangled + 2;
	d->end = mangled + strlen(mangled);
	d->tmpl = -1;
	d->pack_i = -1;
	d->pack_node = -1;
	int root = parse_encoding(d, 1);
	root = parse_clones(d, root);
	int ret;
	if (root < 0 || d->bad || d->p != d->end) {
		ret = -EINVAL;
	} else {
		d->out = out;
		d->size = size;
		d->simple = style == DM_SIMPLE;
		out[0] = 0;
		print(d, root);
		ret = d->bad == 2 ? -ENOSPC : d->bad ? -EINVAL : (int)d->len;
	}
	free(d->lists);
	free(d->n);
	free(d);
	return ret;
}
