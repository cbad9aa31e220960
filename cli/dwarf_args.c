// SPDX-License-Identifier: MIT
/*
 * dwarf_args.c - argument and return-value specs from DWARF (dwarf_args.h).
 *
 * A spec names registers, not C parameters: in uftrace's syntax argN is the
 * Nth integer-class argument register and fpargN the Nth floating-point one
 * (x86-64: rdi rsi rdx rcx r8 r9, xmm0-7; aarch64: x0-x7, v0-v7). Each
 * parameter is classified by its type as the psABI does, and only what
 * this classification knows exactly is described:
 *  - integers, enums, pointers, bool, char, float, double: one register
 *    of their class, while registers of that class remain; after them
 *    8-byte stack slots, taken in order by every class: on x86-64 argN
 *    past the registers names slot N - 6 (uftrace's and the runtime's
 *    reading), up to DWARF_ARGS_ARGN_MAX;
 *  - a long double on x86-64 (memory), a class C++ passes by invisible
 *    reference (one integer register), a struct or union of more than 16
 *    bytes on x86-64 (memory): left out, but what it consumes is known, so
 *    the later parameters keep exact numbers;
 *  - any other struct or union by value, 128-bit integers, complex
 *    numbers: their registers depend on the layout of their members, so
 *    they and every later parameter are left out.
 * A struct returned in memory takes the first integer register (x86-64's
 * hidden pointer; aarch64 uses x8, which is no argument register).
 * What is left out is said in the function's note.
 *
 * Functions are named by the object's symbol table (elf.c, as the
 * runtime names them). A symbol at the entry that is the DWARF name with a
 * suffix (foo.constprop.0, foo.isra.0, foo.part.0) is a copy the compiler
 * specialised, whose arguments differ from the source: not described.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf_args.h"

#ifndef HAVE_LIBDW

int dwarf_args_available(void)
{
	return 0;
}

int dwarf_auto_args(const char *path, const char *pattern, dwarf_args_emit_fn emit, void *ctx,
		    FILE *enums_out, char *err, size_t errlen)
{
	(void)path, (void)pattern, (void)emit, (void)ctx, (void)enums_out;
	if (errlen)
		snprintf(err, errlen, "%s", DWARF_ARGS_NO_LIBDW);
	return -ENOTSUP;
}

#else /* HAVE_LIBDW */

#include <elf.h> /* the system's: EM_* */
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <gelf.h>

#include "elf.h" /* lib/core's reader */
#include "pattern.h"

int dwarf_args_available(void)
{
	return 1;
}

/* The registers of one architecture's calling convention. */
struct abi {
	int nint, nfp;	 /* argument registers of each class */
	int sret_shifts; /* a struct returned in memory takes argument register 1 */
	int big_in_mem;	 /* aggregates over 16 bytes go in memory (x86-64), not by
			    reference (aarch64) */
	int ldouble_mem; /* long double is x87, passed in memory */
	int stack_argn;	 /* argN past the registers names a stack slot */
	/* DWARF numbers of the argument registers, in order */
	int intreg[8], fpreg[8];
};

static const struct abi abi_x86_64 = {
    6, 8, 1, 1, 1, 1, {5, 4, 1, 2, 8, 9}, {17, 18, 19, 20, 21, 22, 23, 24}};
static const struct abi abi_aarch64 = {
    8, 8, 0, 0, 0, 0, {0, 1, 2, 3, 4, 5, 6, 7}, {64, 65, 66, 67, 68, 69, 70, 71}};

/* An enum of the table: its DIE, unique name and "VALUE LABEL" lines. */
struct enum_ent {
	Dwarf_Off off;
	char *name;
	char *lines;
};

struct state {
	const struct abi *abi;
	Dwarf *dw;
	struct enum_ent *enums;
	size_t nenums;
	int oom;
};

/* What a type is as a parameter or return value. */
enum cls {
	CLS_VOID,     /* no type: void */
	CLS_INT,      /* one integer register, format FMT */
	CLS_FP,	      /* one floating-point register, format FMT */
	CLS_SKIP_MEM, /* not described; in memory, consumes no register */
	CLS_SKIP_INT, /* not described; consumes one integer register */
	CLS_SKIP_FP,  /* not described; consumes one floating-point register */
	CLS_STOP,     /* not described; what it consumes is unknown */
	CLS_SRET,     /* (return) in memory: a hidden pointer in register 1 */
	CLS_RET_REGS, /* (return) a struct in registers: not described */
};

struct desc {
	enum cls cls;
	char fmt[160];
	char why[200];
	long long msize; /* CLS_SKIP_MEM: bytes on the stack, 0 unknown */
	int malign;	 /* and their alignment */
};

#define TYPE_DEPTH 64 /* typedef/cv chains longer than this are damage */

/* The DIE DW_AT_type of DIE refers to, following abstract origins and
 * specifications; 0, or -1 when there is none. */
static int type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;

	if (!dwarf_attr_integrate(die, DW_AT_type, &a))
		return -1;
	return dwarf_formref_die(&a, out) ? 0 : -1;
}

/* Follow typedefs and qualifiers from the type of DIE to the type itself.
 * 1: void; 0: OUT filled (TDNAME, if not NULL, gets the last typedef's
 * name on the way, NULL if none); -1: damaged. */
static int resolve(Dwarf_Die *die, Dwarf_Die *out, const char **tdname)
{
	Dwarf_Die cur;

	if (tdname)
		*tdname = NULL;
	if (type_of(die, &cur))
		return dwarf_hasattr_integrate(die, DW_AT_type) ? -1 : 1;
	for (int i = 0; i < TYPE_DEPTH; i++) {
		Dwarf_Die next;

		switch (dwarf_tag(&cur)) {
		case DW_TAG_typedef:
			if (tdname)
				*tdname = dwarf_diename(&cur);
			/* fall through */
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (type_of(&cur, &next))
				return dwarf_hasattr(&cur, DW_AT_type) ? -1 : 1; /* const void */
			cur = next;
			break;
		default: {
			Dwarf_Attribute sig;

			/* A stub of a type kept in a type unit (-fdebug-types-section) */
			if (dwarf_attr(&cur, DW_AT_signature, &sig) &&
			    dwarf_formref_die(&sig, &next)) {
				cur = next;
				break;
			}
			*out = cur;
			return 0;
		}
		}
	}
	return -1;
}

static const char *type_name(Dwarf_Die *t)
{
	const char *n = dwarf_diename(t);

	return n ? n : "(anonymous)";
}

static const char *tag_word(int tag)
{
	switch (tag) {
	case DW_TAG_union_type:
		return "union";
	case DW_TAG_class_type:
		return "class";
	default:
		return "struct";
	}
}

static long long byte_size(Dwarf_Die *t)
{
	Dwarf_Word w;

	if (dwarf_aggregate_size(t, &w) == 0)
		return (long long)w;
	return dwarf_bytesize(t);
}

static int udata(Dwarf_Die *die, int attr, Dwarf_Word *v)
{
	Dwarf_Attribute a;

	return dwarf_attr(die, attr, &a) && dwarf_formudata(&a, v) == 0 ? 0 : -1;
}

/* Is the base type (or enum's underlying type) T signed? */
static int is_signed(Dwarf_Die *t)
{
	Dwarf_Word enc;
	Dwarf_Die u;

	if (dwarf_tag(t) == DW_TAG_enumeration_type) {
		if (resolve(t, &u, NULL) != 0)
			return -1; /* unknown: decided by the values */
		t = &u;
	}
	if (udata(t, DW_AT_encoding, &enc))
		return -1;
	return enc == DW_ATE_signed || enc == DW_ATE_signed_char;
}

/* One enumerator's value into BUF: its bits as a signed integer of the
 * enum's SIZE bytes, in decimal (how the readers take an e:NAME value). */
static int enumerator_value(Dwarf_Die *e, int size, char *buf, size_t len)
{
	Dwarf_Attribute a;
	uint64_t v;

	if (!dwarf_attr(e, DW_AT_const_value, &a))
		return -1;
	if (dwarf_whatform(&a) == DW_FORM_sdata || dwarf_whatform(&a) == DW_FORM_implicit_const) {
		Dwarf_Sword sv;

		if (dwarf_formsdata(&a, &sv))
			return -1;
		v = (uint64_t)sv;
	} else {
		Dwarf_Word uv;

		if (dwarf_formudata(&a, &uv))
			return -1;
		v = uv;
	}
	if (size > 0 && size < 8) {
		unsigned shift = 64 - 8 * (unsigned)size;

		v = (uint64_t)((int64_t)(v << shift) >> shift);
	}
	snprintf(buf, len, "%lld", (long long)(int64_t)v);
	return 0;
}

/* A name uftrace's e:NAME takes: [A-Za-z_][A-Za-z0-9_]* */
static void sanitize(char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		*s = '_';
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			*s = '_';
}

/* The table's name for enum T (TDNAME: a typedef naming an anonymous
 * one), registering it; NULL when out of memory or it has no enumerators. */
static const char *enum_register(struct state *st, Dwarf_Die *t, const char *tdname)
{
	Dwarf_Off off = dwarf_dieoffset(t);
	char *lines = NULL, *name = NULL, base[DWARF_ARGS_ENUM_MAX - 2];
	size_t llen = 0;
	FILE *f;
	Dwarf_Die e;
	int size = (int)dwarf_bytesize(t), n = 0;
	struct enum_ent *ne;

	for (size_t i = 0; i < st->nenums; i++)
		if (st->enums[i].off == off)
			return st->enums[i].name;
	f = open_memstream(&lines, &llen);
	if (!f)
		goto oom;
	if (dwarf_child(t, &e) == 0) {
		do {
			char val[32];
			const char *label = dwarf_diename(&e);

			if (dwarf_tag(&e) != DW_TAG_enumerator || !label ||
			    enumerator_value(&e, size, val, sizeof(val)))
				continue;
			fprintf(f, " %s %s\n", val, label);
			n++;
		} while (dwarf_siblingof(&e, &e) == 0);
	}
	if (fclose(f))
		goto oom;
	if (!n) {
		free(lines);
		return NULL;
	}
	if (dwarf_diename(t))
		snprintf(base, sizeof(base), "%s", dwarf_diename(t));
	else if (tdname)
		snprintf(base, sizeof(base), "%s", tdname);
	else
		snprintf(base, sizeof(base), "anon_enum_%llx", (unsigned long long)off);
	sanitize(base);
	/* The same enum from another compilation unit shares its name; a
	 * different one of the same name gets a suffix. */
	for (int k = 1; k < 100; k++) {
		int clash = 0;

		free(name);
		name = NULL;
		if (k == 1 ? !(name = strdup(base)) : asprintf(&name, "%s_%d", base, k) < 0)
			goto oom;
		for (size_t i = 0; i < st->nenums && !clash; i++) {
			if (strcmp(st->enums[i].name, name))
				continue;
			if (!strcmp(st->enums[i].lines, lines)) {
				free(name);
				free(lines);
				return st->enums[i].name;
			}
			clash = 1;
		}
		if (!clash)
			break;
	}
	ne = realloc(st->enums, (st->nenums + 1) * sizeof(*ne));
	if (!ne)
		goto oom;
	st->enums = ne;
	ne[st->nenums++] = (struct enum_ent){off, name, lines};
	return name;
oom:
	free(name);
	free(lines);
	st->oom = 1;
	return NULL;
}

/* Does aggregate T hold a vector member (which changes its classification)? */
static int has_vector(Dwarf_Die *t, int depth)
{
	Dwarf_Die m, mt;

	if (depth > 8 || dwarf_child(t, &m))
		return depth > 8;
	do {
		if (dwarf_tag(&m) != DW_TAG_member || resolve(&m, &mt, NULL))
			continue;
		if (dwarf_tag(&mt) == DW_TAG_array_type && dwarf_hasattr(&mt, DW_AT_GNU_vector))
			return 1;
		if ((dwarf_tag(&mt) == DW_TAG_structure_type ||
		     dwarf_tag(&mt) == DW_TAG_union_type || dwarf_tag(&mt) == DW_TAG_class_type) &&
		    has_vector(&mt, depth + 1))
			return 1;
	} while (dwarf_siblingof(&m, &m) == 0);
	return 0;
}

/* The alignment of type T (after typedefs), or -1 when T holds a member
 * at an offset its type's alignment does not allow (a packed struct: class
 * MEMORY on x86-64) or cannot be read. */
static int alignment(Dwarf_Die *t, int depth)
{
	Dwarf_Die m, mt;
	int al = 1;

	if (depth > 8)
		return -1; /* nested deeper than sense, or a cycle in damaged DWARF */
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type:
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_ptr_to_member_type: {
		long long s = byte_size(t);

		return s > 0 && s <= 16 ? (int)s : -1;
	}
	case DW_TAG_array_type:
		return resolve(t, &mt, NULL) == 0 ? alignment(&mt, depth + 1) : -1;
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		break;
	default:
		return -1;
	}
	if (dwarf_child(t, &m))
		return 1;
	do {
		Dwarf_Word off = 0;
		int a;

		if (dwarf_tag(&m) != DW_TAG_member || dwarf_hasattr(&m, DW_AT_bit_size))
			continue;
		if (resolve(&m, &mt, NULL))
			return -1;
		a = alignment(&mt, depth + 1);
		if (a < 0)
			return -1;
		if (dwarf_hasattr(&m, DW_AT_data_member_location) &&
		    udata(&m, DW_AT_data_member_location, &off))
			return -1; /* a location expression: not a plain offset */
		if (off % (Dwarf_Word)a)
			return -1;
		if (a > al)
			al = a;
	} while (dwarf_siblingof(&m, &m) == 0);
	return al;
}

/* Is C++ class T surely not trivially copyable (the Itanium ABI passes it
 * by invisible reference)? For compilers that give no
 * DW_AT_calling_convention (gcc): a virtual function, or a destructor
 * declared and not defaulted in the class. 0 means not known. */
static int nontrivial(Dwarf_Die *t)
{
	Dwarf_Die m;
	const char *cls = dwarf_diename(t);

	if (dwarf_child(t, &m))
		return 0;
	do {
		const char *n;
		Dwarf_Word dflt = 0;

		if (dwarf_tag(&m) == DW_TAG_inheritance && dwarf_hasattr(&m, DW_AT_virtuality))
			return 1;
		if (dwarf_tag(&m) != DW_TAG_subprogram)
			continue;
		if (dwarf_hasattr(&m, DW_AT_virtuality))
			return 1;
		n = dwarf_diename(&m);
		if (n && n[0] == '~' && cls && !strncmp(n + 1, cls, strcspn(cls, "<")) &&
		    !dwarf_hasattr(&m, DW_AT_artificial) &&
		    (udata(&m, DW_AT_defaulted, &dflt) || dflt != DW_DEFAULTED_in_class))
			return 1;
	} while (dwarf_siblingof(&m, &m) == 0);
	return 0;
}

/* A struct, union or class T by value: as a parameter (RET 0) or as the
 * return value (RET 1). CXX: the unit is C++. */
static void describe_aggregate(const struct abi *abi, Dwarf_Die *t, int ret, int cxx,
			       struct desc *d)
{
	const char *kind = tag_word(dwarf_tag(t)), *name = type_name(t);
	long long size = byte_size(t);
	Dwarf_Word cc = 0;
	int have_cc = udata(t, DW_AT_calling_convention, &cc) == 0;

	if ((have_cc && cc == DW_CC_pass_by_reference) || (cxx && !have_cc && nontrivial(t))) {
		/* Not trivially copyable: a pointer to a copy (argument), or a
		 * hidden pointer to the result (return), in both ABIs. */
		d->cls = ret ? (abi->sret_shifts ? CLS_SRET : CLS_RET_REGS) : CLS_SKIP_INT;
		snprintf(d->why, sizeof(d->why), "%s %s is %s by invisible reference", kind, name,
			 ret ? "returned" : "passed");
		return;
	}
	if (size < 0 || (cxx && !have_cc)) {
		d->cls = CLS_STOP;
		snprintf(d->why, sizeof(d->why),
			 "how %s %s is passed is not known (no size or calling convention)", kind,
			 name);
		return;
	}
	if (abi->big_in_mem && size > 16 && !has_vector(t, 0)) {
		d->cls = ret ? CLS_SRET : CLS_SKIP_MEM;
		d->malign = alignment(t, 0);
		d->msize = d->malign > 0 ? size : 0;
		snprintf(d->why, sizeof(d->why), "%s %s (%lld bytes) is %s in memory", kind, name,
			 size, ret ? "returned" : "passed");
		return;
	}
	if (ret) {
		/* Up to 16 bytes: in registers unless a member is unaligned
		 * (x86-64: then in memory, through a hidden pointer); aarch64
		 * returns in memory through x8, no argument register. */
		d->cls = !abi->sret_shifts || alignment(t, 0) > 0 ? CLS_RET_REGS : CLS_STOP;
		snprintf(d->why, sizeof(d->why), "%s %s is returned by value", kind, name);
		return;
	}
	d->cls = CLS_STOP;
	snprintf(d->why, sizeof(d->why), "%s %s (%lld bytes) is passed by value", kind, name, size);
}

/* Describe the type of DIE (a parameter, or a subprogram for its return
 * value when RET). PROMOTE: an unprototyped C function (float travels as
 * double). */
static void describe(struct state *st, Dwarf_Die *die, int ret, int cxx, int promote,
		     struct desc *d)
{
	Dwarf_Die t, target;
	const char *tdname;
	Dwarf_Word enc = 0;
	long long size;
	int r = resolve(die, &t, &tdname);

	d->fmt[0] = d->why[0] = 0;
	d->msize = d->malign = 0;
	if (r == 1) {
		d->cls = CLS_VOID;
		return;
	}
	d->cls = CLS_STOP;
	if (r < 0) {
		snprintf(d->why, sizeof(d->why), "its type cannot be read");
		return;
	}
	size = byte_size(&t);
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		udata(&t, DW_AT_encoding, &enc);
		switch (enc) {
		case DW_ATE_boolean:
		case DW_ATE_signed:
		case DW_ATE_unsigned:
		case DW_ATE_signed_char:
		case DW_ATE_unsigned_char:
		case DW_ATE_UTF:
			if (size == 16) {
				snprintf(d->why, sizeof(d->why),
					 "%s is a 128-bit integer (a register pair)",
					 type_name(&t));
				return;
			}
			if (size != 1 && size != 2 && size != 4 && size != 8)
				break;
			d->cls = CLS_INT;
			if (size == 1 && dwarf_diename(&t) && !strcmp(dwarf_diename(&t), "char"))
				snprintf(d->fmt, sizeof(d->fmt), "c");
			else
				snprintf(d->fmt, sizeof(d->fmt), "%c%lld",
					 enc == DW_ATE_signed || enc == DW_ATE_signed_char ? 'i'
											   : 'u',
					 size * 8);
			return;
		case DW_ATE_float:
			if (size == 4 || size == 8) {
				d->cls = CLS_FP;
				snprintf(d->fmt, sizeof(d->fmt), "f%lld",
					 size == 4 && promote && !ret ? 64 : size * 8);
				return;
			}
			if (st->abi->ldouble_mem && dwarf_diename(&t) &&
			    !strcmp(dwarf_diename(&t), "long double")) {
				d->cls = ret ? CLS_RET_REGS : CLS_SKIP_MEM;
				d->msize = d->malign = 16;
				snprintf(d->why, sizeof(d->why),
					 "long double (x87) is not described");
				return;
			}
			if (size == 16) {
				d->cls = ret ? CLS_RET_REGS : CLS_SKIP_FP;
				snprintf(d->why, sizeof(d->why), "%s (128-bit) is not described",
					 type_name(&t));
				return;
			}
			break;
		default:
			break;
		}
		snprintf(d->why, sizeof(d->why), "%s is not described (%lld bytes)", type_name(&t),
			 size);
		return;
	case DW_TAG_pointer_type:
		d->cls = CLS_INT;
		snprintf(d->fmt, sizeof(d->fmt), "p");
		if (resolve(&t, &target, NULL) == 0 && dwarf_tag(&target) == DW_TAG_base_type &&
		    dwarf_diename(&target) && !strcmp(dwarf_diename(&target), "char"))
			snprintf(d->fmt, sizeof(d->fmt), "s");
		return;
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_unspecified_type: /* decltype(nullptr) */
		d->cls = CLS_INT;
		snprintf(d->fmt, sizeof(d->fmt), "p");
		return;
	case DW_TAG_ptr_to_member_type:
		if (resolve(&t, &target, NULL) == 0 &&
		    dwarf_tag(&target) == DW_TAG_subroutine_type) {
			snprintf(d->why, sizeof(d->why),
				 "a pointer to member function is a register pair");
			return;
		}
		d->cls = CLS_INT;
		snprintf(d->fmt, sizeof(d->fmt), "i64");
		return;
	case DW_TAG_enumeration_type: {
		const char *name;

		if (size != 1 && size != 2 && size != 4 && size != 8)
			break;
		/* e:NAME is a 4-byte value: other sizes as their integers */
		name = size == 4 ? enum_register(st, &t, tdname) : NULL;
		d->cls = CLS_INT;
		if (name)
			snprintf(d->fmt, sizeof(d->fmt), "e:%s", name);
		else /* another size, or no enumerators: its number */
			snprintf(d->fmt, sizeof(d->fmt), "%c%lld", is_signed(&t) > 0 ? 'i' : 'u',
				 size * 8);
		return;
	}
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type:
		describe_aggregate(st->abi, &t, ret, cxx, d);
		return;
	default:
		break;
	}
	snprintf(d->why, sizeof(d->why), "%s (DWARF tag 0x%x) is not described", type_name(&t),
		 (unsigned)dwarf_tag(&t));
}

/* A function to describe: its entry, DIE and symbol. */
struct cand {
	uint64_t addr;
	Dwarf_Off die;
	int32_t func; /* elf_image.funcs index */
};

struct walk {
	struct state *st;
	const struct elf_image *img;
	const char *pattern;
	struct cand *v;
	size_t n, cap;
	int depth;
	int damaged; /* a DIE could not be read: the rest of its unit is lost */
};

/* The DWARF's name of function DIE: its linkage name, else its name. */
static const char *die_func_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *n = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	return n ? n : dwarf_diename(die);
}

/* The entry of function DIE: low_pc, or the first range (a function split
 * into hot and cold parts has ranges; its entry starts the first). */
static int die_entry(Dwarf_Die *die, Dwarf_Addr *addr)
{
	Dwarf_Addr base, start, end;

	if (dwarf_lowpc(die, addr) == 0)
		return 0;
	if (dwarf_ranges(die, 0, &base, &start, &end) > 0) {
		*addr = start;
		return 0;
	}
	return -1;
}

static int add_cand(struct walk *w, Dwarf_Die *die)
{
	Dwarf_Addr addr;
	int32_t fi;
	const char *sym;

	if (dwarf_hasattr(die, DW_AT_declaration) || die_entry(die, &addr))
		return 0;
	fi = elf_func_lookup(w->img, addr);
	if (fi < 0 || w->img->funcs[fi].addr != addr)
		return 0; /* no symbol: the runtime cannot name it either */
	sym = elf_func_name(w->img, fi);
	if (w->pattern && !pat_match_func(w->pattern, sym))
		return 0;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct cand *v = realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = (struct cand){addr, dwarf_dieoffset(die), fi};
	return 0;
}

/* Functions below PARENT: at the unit's top, in namespaces and classes. */
static int walk_dies(struct walk *w, Dwarf_Die *parent)
{
	Dwarf_Die c;
	int err = 0, r;

	if (w->depth > 32)
		return 0;
	r = dwarf_child(parent, &c);
	if (r) {
		w->damaged |= r < 0;
		return 0;
	}
	w->depth++;
	do {
		switch (dwarf_tag(&c)) {
		case DW_TAG_subprogram:
			err = add_cand(w, &c);
			break;
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			err = walk_dies(w, &c);
			break;
		default:
			break;
		}
	} while (!err && (r = dwarf_siblingof(&c, &c)) == 0);
	w->damaged |= r < 0;
	w->depth--;
	return err;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->die < y->die ? -1 : x->die > y->die;
}

/* Append to a note. */
static void note_add(char *note, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note_add(char *note, size_t len, const char *fmt, ...)
{
	size_t n = strlen(note);
	va_list ap;

	if (n && n + 2 < len) {
		strcpy(note + n, "; ");
		n += 2;
	}
	if (n >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(note + n, len - n, fmt, ap);
	va_end(ap);
}

/* "parameter 2 (name)" */
static void param_label(Dwarf_Die *p, int pos, char *buf, size_t len)
{
	const char *n = dwarf_diename(p);

	if (n)
		snprintf(buf, len, "parameter %d (%s)", pos, n);
	else
		snprintf(buf, len, "parameter %d", pos);
}

static int spec_add(char *spec, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int spec_add(char *spec, size_t len, const char *fmt, ...)
{
	size_t n = strlen(spec);
	va_list ap;
	int r;

	if (n && n + 1 < len)
		spec[n++] = ',';
	va_start(ap, fmt);
	r = vsnprintf(spec + n, len > n ? len - n : 0, fmt, ap);
	va_end(ap);
	if (r < 0 || n + (size_t)r >= len) {
		spec[n ? n - 1 : 0] = 0;
		return -1;
	}
	return 0;
}

/*
 * Where the DWARF says parameter P (of SIG; its concrete copy in DIE) is
 * at the function's entry ADDR: its DWARF register number, or -1 when it
 * says nothing as plain (a stack slot at -O0, no location, an expression).
 * A compiler that removed or reordered parameters of a local function
 * without renaming it (clang's dead-argument elimination) still
 * describes the source's parameters, but their locations at the entry
 * are the registers actually used.
 */
static int entry_reg(Dwarf_Die *die, Dwarf_Die *sig, Dwarf_Die *p, Dwarf_Addr addr)
{
	Dwarf_Die c, *q = p;
	Dwarf_Attribute a;
	Dwarf_Op *expr;
	size_t len;

	if (sig != die) {
		q = NULL;
		if (dwarf_child(die, &c) == 0)
			do {
				Dwarf_Die o;

				if (dwarf_tag(&c) == DW_TAG_formal_parameter &&
				    dwarf_attr(&c, DW_AT_abstract_origin, &a) &&
				    dwarf_formref_die(&a, &o) &&
				    dwarf_dieoffset(&o) == dwarf_dieoffset(p)) {
					q = &c;
					break;
				}
			} while (dwarf_siblingof(&c, &c) == 0);
		if (!q)
			return -1;
	}
	if (!dwarf_attr(q, DW_AT_location, &a) ||
	    dwarf_getlocation_addr(&a, addr, &expr, &len, 1) != 1 || len != 1)
		return -1;
	if (expr[0].atom >= DW_OP_reg0 && expr[0].atom <= DW_OP_reg31)
		return expr[0].atom - DW_OP_reg0;
	if (expr[0].atom == DW_OP_regx)
		return (int)expr[0].number;
	return -1;
}

/* Is P, a parameter of abstract origin SIG, absent from its concrete copy
 * DIE? Only artificial parameters are dropped from a copy: gcc's abstract
 * destructor and constructor list __in_chrg and __vtt_parm, which only
 * some of their copies take. */
static int dropped(Dwarf_Die *die, Dwarf_Die *sig, Dwarf_Die *p)
{
	Dwarf_Die c, o;
	Dwarf_Attribute a;
	int any = 0;

	if (sig == die || !dwarf_hasattr(p, DW_AT_artificial) || dwarf_child(die, &c))
		return 0;
	do {
		if (dwarf_tag(&c) != DW_TAG_formal_parameter)
			continue;
		any = 1;
		if (dwarf_attr(&c, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &o) &&
		    dwarf_dieoffset(&o) == dwarf_dieoffset(p))
			return 0;
	} while (dwarf_siblingof(&c, &c) == 0);
	return any;
}

#define SPEC_MAX 1024
#define NOTE_MAX 1024

/* Describe function DIE into ARG, RET and NOTE. */
static void describe_func(struct state *st, Dwarf_Die *die, Dwarf_Addr entry, int cxx,
			  const char *sym, char *arg, char *ret, char *note)
{
	const struct abi *abi = st->abi;
	Dwarf_Die origin, p, *sig = die;
	Dwarf_Attribute a;
	Dwarf_Word cc;
	const char *dname = die_func_name(die);
	struct desc d;
	int nint = 0, nfp = 0, pos = 0, promote;
	/* 8-byte stack slots the arguments so far take (x86-64: in order,
	 * whatever their class); -1 once unknown. argN past the registers
	 * names slot N - nint (the runtime reads it there, as uftrace). */
	int slot = abi->stack_argn ? 0 : -1;
	size_t dl;

	arg[0] = ret[0] = note[0] = 0;
	/* Suffixes that keep the signature: gcc's LTO-private and local
	 * aliases, clang's ThinLTO-promoted locals. */
	if (dname && strcmp(dname, sym) && !strncmp(sym, dname, (dl = strlen(dname))) &&
	    sym[dl] == '.' && strncmp(sym + dl, ".lto_priv.", 10) &&
	    strcmp(sym + dl, ".localalias") && strncmp(sym + dl, ".llvm.", 6)) {
		note_add(note, NOTE_MAX,
			 "a copy of %s the compiler specialised: its arguments differ from the "
			 "source's",
			 dname);
		return;
	}
	if (udata(die, DW_AT_calling_convention, &cc) == 0 && cc == DW_CC_nocall) {
		note_add(note, NOTE_MAX,
			 "the compiler changed its calling convention (DW_CC_nocall)");
		return;
	}
	/* A concrete copy of an inlined function: the parameters (the
	 * signature) are its abstract origin's. */
	if (dwarf_attr(die, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &origin))
		sig = &origin;
	promote = !cxx && !dwarf_hasattr_integrate(die, DW_AT_prototyped);

	describe(st, die, 1, cxx, 0, &d);
	switch (d.cls) {
	case CLS_VOID:
		break;
	case CLS_INT:
	case CLS_FP:
		snprintf(ret, SPEC_MAX, "retval/%s", d.fmt);
		break;
	case CLS_SRET:
		nint = 1; /* the hidden pointer */
		note_add(note, NOTE_MAX, "return value: %s, not described", d.why);
		break;
	case CLS_STOP:
		note_add(note, NOTE_MAX, "return value: %s; the arguments are not described",
			 d.why);
		return;
	default:
		note_add(note, NOTE_MAX, "return value: %s", d.why[0] ? d.why : "not described");
		break;
	}

	if (dwarf_child(sig, &p))
		return;
	do {
		char label[160];

		if (dwarf_tag(&p) == DW_TAG_unspecified_parameters) {
			note_add(note, NOTE_MAX, "variadic: only the fixed arguments");
			break;
		}
		if (dwarf_tag(&p) != DW_TAG_formal_parameter || dropped(die, sig, &p))
			continue;
		pos++;
		param_label(&p, pos, label, sizeof(label));
		describe(st, &p, 0, cxx, promote, &d);
		if ((d.cls == CLS_INT && nint < abi->nint) || (d.cls == CLS_FP && nfp < abi->nfp)) {
			int want = d.cls == CLS_INT ? abi->intreg[nint] : abi->fpreg[nfp];
			int reg = entry_reg(die, sig, &p, entry);

			if (reg >= 0 && reg != want) {
				arg[0] = ret[0] = note[0] = 0;
				note_add(note, NOTE_MAX,
					 "%s arrives in DWARF register %d, not %d: the compiler "
					 "changed its calling convention",
					 label, reg, want);
				return;
			}
		}
		switch (d.cls) {
		case CLS_INT:
			if (nint >= abi->nint) {
				int n = slot < 0 ? 0 : abi->nint + ++slot;

				if (!n || n > DWARF_ARGS_ARGN_MAX)
					note_add(note, NOTE_MAX, "%s: on the stack, not described",
						 label);
				else if (spec_add(arg, SPEC_MAX, "arg%d/%s", n, d.fmt)) {
					note_add(note, NOTE_MAX, "%s and later: spec too long",
						 label);
					return;
				}
			} else if (spec_add(arg, SPEC_MAX, "arg%d/%s", ++nint, d.fmt)) {
				note_add(note, NOTE_MAX, "%s and later: spec too long", label);
				return;
			}
			break;
		case CLS_FP:
			if (nfp >= abi->nfp) {
				slot += slot >= 0;
				note_add(note, NOTE_MAX, "%s: on the stack, not described", label);
			} else if (spec_add(arg, SPEC_MAX, "fparg%d/%s", ++nfp, d.fmt)) {
				note_add(note, NOTE_MAX, "%s and later: spec too long", label);
				return;
			}
			break;
		case CLS_SKIP_INT:
			if (nint++ >= abi->nint)
				slot += slot >= 0;
			note_add(note, NOTE_MAX, "%s: %s, not described", label, d.why);
			break;
		case CLS_SKIP_FP:
			if (nfp++ >= abi->nfp)
				slot = -1;
			note_add(note, NOTE_MAX, "%s: %s", label, d.why);
			break;
		case CLS_SKIP_MEM:
			if (slot >= 0 && d.msize > 0 &&
			    (d.malign == 8 || d.malign == 16 || d.malign == 4 || d.malign == 2 ||
			     d.malign == 1)) {
				if (d.malign == 16)
					slot = (slot + 1) & ~1;
				slot += (int)((d.msize + 7) / 8);
			} else {
				slot = -1;
			}
			note_add(note, NOTE_MAX, "%s: %s, not described", label, d.why);
			break;
		default:
			note_add(note, NOTE_MAX,
				 "%s: %s; it and the later parameters are not described", label,
				 d.why[0] ? d.why : "its type is not described");
			return;
		}
	} while (dwarf_siblingof(&p, &p) == 0);
}

static int is_cxx(Dwarf_Die *cu)
{
	switch (dwarf_srclang(cu)) {
	case DW_LANG_C_plus_plus:
	case DW_LANG_C_plus_plus_03:
	case DW_LANG_C_plus_plus_11:
	case DW_LANG_C_plus_plus_14:
		return 1;
	default:
		return 0;
	}
}

static void seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

int dwarf_auto_args(const char *path, const char *pattern, dwarf_args_emit_fn emit, void *ctx,
		    FILE *enums_out, char *err, size_t errlen)
{
	struct elf_image img;
	struct state st = {0};
	struct walk w = {0};
	Dwfl *dwfl = NULL;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t unit_type;
	char *arg = NULL, *ret = NULL, *note = NULL;
	int rc, reported = 0, nskeleton = 0;
	GElf_Ehdr ehdr;
	Elf *elf;

	if (errlen)
		err[0] = 0;
	rc = elf_load(&img, path, 0, 0);
	if (rc) {
		if (rc == -EINVAL && img.err[0])
			seterr(err, errlen, "%s", img.err);
		else
			seterr(err, errlen, "cannot read '%s': %s", path, strerror(-rc));
		elf_free(&img);
		return rc;
	}
	dwfl = dwfl_begin(&offline_callbacks);
	if (!dwfl) {
		rc = -ENOMEM;
		seterr(err, errlen, "cannot start libdw: %s", dwfl_errmsg(-1));
		goto out;
	}
	dwfl_report_begin(dwfl);
	mod = dwfl_report_offline(dwfl, path, path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	st.dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	if (!st.dw) {
		rc = -ENODATA;
		seterr(err, errlen,
		       "'%s' has no DWARF debug information (build it with -g, or install its "
		       "debug file)",
		       path);
		goto out;
	}
	elf = dwarf_getelf(st.dw);
	if (!elf || !gelf_getehdr(elf, &ehdr))
		ehdr.e_machine = EM_NONE;
	if (ehdr.e_machine == EM_X86_64) {
		st.abi = &abi_x86_64;
	} else if (ehdr.e_machine == EM_AARCH64) {
		st.abi = &abi_aarch64;
	} else {
		rc = -ENOTSUP;
		seterr(err, errlen, "'%s': arguments are described for x86-64 and aarch64 only",
		       path);
		goto out;
	}

	/* Every function's entry, then each described once, by address. */
	w.st = &st;
	w.img = &img;
	w.pattern = pattern;
	while ((rc = dwarf_get_units(st.dw, cu, &cu, NULL, &unit_type, &cudie, &subdie)) == 0) {
		nskeleton += unit_type == DW_UT_skeleton;
		if (unit_type != DW_UT_compile)
			continue; /* partial, type and split units hold no definitions we read */
		rc = walk_dies(&w, &cudie);
		if (rc)
			goto oom;
	}
	if (!w.n && nskeleton) {
		rc = -ENOTSUP;
		seterr(err, errlen, "'%s' has split DWARF (-gsplit-dwarf), which is not read",
		       path);
		goto out;
	}
	if (rc < 0 || w.damaged) {
		/* A unit header cannot be read: the units after it are lost. */
		if (!w.n) {
			rc = -EINVAL;
			seterr(err, errlen, "'%s': its DWARF is damaged (%s)", path,
			       dwarf_errmsg(-1));
			goto out;
		}
		seterr(err, errlen, "'%s': part of its DWARF is damaged (%s); read up to there",
		       path, dwarf_errmsg(-1));
	}
	if (w.n)
		qsort(w.v, w.n, sizeof(*w.v), cand_cmp);
	arg = malloc(SPEC_MAX);
	ret = malloc(SPEC_MAX);
	note = malloc(NOTE_MAX);
	if (!arg || !ret || !note)
		goto oom;
	rc = 0;
	for (size_t i = 0; i < w.n; i++) {
		Dwarf_Die die, cud;
		struct dwarf_func_args f;

		if (i && w.v[i].addr == w.v[i - 1].addr)
			continue; /* one function, described in several units */
		if (!dwarf_offdie(st.dw, w.v[i].die, &die))
			continue;
		describe_func(&st, &die, w.v[i].addr,
			      dwarf_diecu(&die, &cud, NULL, NULL) && is_cxx(&cud),
			      elf_func_name(&img, w.v[i].func), arg, ret, note);
		if (st.oom)
			goto oom;
		f.func = elf_func_name(&img, w.v[i].func);
		f.addr = w.v[i].addr;
		f.argspec = arg[0] ? arg : NULL;
		f.retspec = ret[0] ? ret : NULL;
		f.note = note[0] ? note : NULL;
		reported++;
		rc = emit ? emit(ctx, &f) : 0;
		if (rc)
			goto out;
	}
	if (enums_out)
		for (size_t i = 0; i < st.nenums; i++) {
			char *line = st.enums[i].lines, *nl;

			for (; (nl = strchr(line, '\n')); line = nl + 1)
				fprintf(enums_out, "%s%.*s\n", st.enums[i].name, (int)(nl - line),
					line);
		}
	rc = reported;
	goto out;
oom:
	rc = -ENOMEM;
	seterr(err, errlen, "out of memory while reading the DWARF of '%s'", path);
out:
	free(arg);
	free(ret);
	free(note);
	free(w.v);
	for (size_t i = 0; i < st.nenums; i++) {
		free(st.enums[i].name);
		free(st.enums[i].lines);
	}
	free(st.enums);
	if (dwfl)
		dwfl_end(dwfl);
	elf_free(&img);
	return rc;
}

#endif /* HAVE_LIBDW */
