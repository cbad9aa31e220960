// SPDX-License-Identifier: MIT
/*
 * elf.c - call-site records and function symbols from ELF objects.
 *
 * The file is mapped read-only for the duration of elf_load() and every
 * header, table and string in it is bounds-checked before use: the CLI runs
 * this on arbitrary files, the runtime inside other people's processes.
 * Everything kept is copied into the image, so the mapping is dropped before
 * returning.
 *
 * Order of work:
 *   1. ELF header, program headers (PT_LOAD, PT_NOTE build-id, PT_INTERP,
 *      PT_DYNAMIC), section headers;
 *   2. functions from .symtab, else from the separate debug file found by
 *      build-id, else from .dynsym (the image is then "stripped");
 *   3. records from every __patchable_function_entries / __mcount_loc
 *      section, read from memory (MEM) or from the file with the dynamic
 *      RELA relocations applied;
 *   4. each record turned into a site by the rules in elf.h.
 */
/* The system <elf.h>: lib/ is on the quote path only (-iquote lib). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf.h"

/* How far after a record a function may start (-fpatchable-function-entry=N,M
 * puts M NOPs before the symbol). */
#define PREFIX_PAD_MAX 16

/* The mapped file and, for MEM, the load bias; lives during elf_load(). */
struct reader {
	const unsigned char *map;
	size_t size;
	const char *path;
	uintptr_t bias;
	int mem;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh; /* NULL when the file has no section headers */
	size_t shnum;
	const char *shstr; /* section name table */
	size_t shstr_size;
};

static void set_err(struct elf_image *img, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_err(struct elf_image *img, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(img->err, sizeof(img->err), fmt, ap);
	va_end(ap);
}

/* Is [off, off + len) inside a buffer of SIZE bytes? Overflow-safe. */
static int in_range(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static uint64_t get64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* The NUL-terminated string at OFF of a table, or NULL if it runs off it. */
static const char *tab_str(const char *tab, size_t size, uint64_t off)
{
	if (off >= size || !memchr(tab + off, 0, size - off))
		return NULL;
	return tab + off;
}

static const char *sec_name(const struct reader *r, size_t i)
{
	const char *s;

	if (!r->shstr)
		return "";
	s = tab_str(r->shstr, r->shstr_size, r->sh[i].sh_name);
	return s ? s : "";
}

/* ---- segments and code bytes ------------------------------------------ */

/* The PT_LOAD segment holding [addr, addr + len) in memory, or NULL. */
static const struct elf_load_seg *seg_of(const struct elf_image *img, uint64_t addr, uint64_t len,
					 int in_file)
{
	for (size_t i = 0; i < img->nsegs; i++) {
		const struct elf_load_seg *s = &img->segs[i];
		uint64_t sz = in_file ? s->filesz : s->memsz;

		if (addr >= s->vaddr && in_range(addr - s->vaddr, len, sz))
			return s;
	}
	return NULL;
}

/*
 * Copy LEN bytes at link-time address ADDR: from this process for MEM (the
 * range must lie in a PT_LOAD so it is mapped), else from the file (the range
 * must lie in the file part of a PT_LOAD). Returns 0 or -1.
 */
static int read_addr(const struct elf_image *img, const struct reader *r, uint64_t addr, void *buf,
		     size_t len)
{
	const struct elf_load_seg *s = seg_of(img, addr, len, !r->mem);

	if (!s)
		return -1;
	if (r->mem) {
		memcpy(buf, (const void *)(uintptr_t)(addr + r->bias), len);
		return 0;
	}
	/* s->offset + filesz was checked against the file size at load */
	memcpy(buf, r->map + s->offset + (addr - s->vaddr), len);
	return 0;
}

static int is_exec_addr(const struct elf_image *img, uint64_t addr, int in_file)
{
	const struct elf_load_seg *s = seg_of(img, addr, 1, in_file);

	return s && (s->flags & PF_X);
}

/* Per-architecture knowledge (lib/arch/<arch>/elf_site.c): only the site
 * fix-up differs; everything else in this file is generic ELF64. */
static int arch_read(const struct elf_image *img, const void *ctx, uint64_t addr, void *buf,
		     size_t len)
{
	return read_addr(img, ctx, addr, buf, len);
}

static int arch_func_start(const struct elf_image *img, uint64_t addr)
{
	int32_t f = elf_func_lookup(img, addr);
	return f < 0 || img->funcs[f].addr == addr;
}

static const struct elf_arch *const arches[] = {
    &elf_arch_x86_64,
};

/* ---- headers ----------------------------------------------------------- */

static int check_ehdr(struct elf_image *img, struct reader *r, const struct elf_arch **arch)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)r->map;

	if (r->size < EI_NIDENT || memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		set_err(img, "%s: not an ELF file", r->path);
		return -EINVAL;
	}
	if (r->size < sizeof(*eh)) {
		set_err(img, "%s: ELF header truncated (file is %zu bytes)", r->path, r->size);
		return -EINVAL;
	}
	*arch = NULL;
	if (eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_ident[EI_DATA] == ELFDATA2LSB) {
		for (size_t i = 0; i < sizeof(arches) / sizeof(arches[0]); i++)
			if (arches[i]->machine == eh->e_machine)
				*arch = arches[i];
	}
	if (!*arch) {
		set_err(img, "%s: not an x86-64 ELF object", r->path);
		return -EINVAL;
	}
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) {
		set_err(img, "%s: not an executable or shared object (ELF type %u)", r->path,
			eh->e_type);
		return -EINVAL;
	}
	r->eh = eh;
	img->type = eh->e_type;
	return 0;
}

static int load_shdrs(struct elf_image *img, struct reader *r)
{
	const Elf64_Ehdr *eh = r->eh;
	const Elf64_Shdr *sh;
	uint64_t n = eh->e_shnum, strndx = eh->e_shstrndx;

	if (eh->e_shoff == 0)
		return 0; /* no section headers: only segments */
	if (eh->e_shentsize != sizeof(Elf64_Shdr)) {
		set_err(img, "%s: unexpected section header size %u", r->path, eh->e_shentsize);
		return -EINVAL;
	}
	if (!in_range(eh->e_shoff, sizeof(Elf64_Shdr), r->size) || eh->e_shoff % sizeof(uint64_t)) {
		set_err(img, "%s: section header table at offset 0x%llx lies outside the file",
			r->path, (unsigned long long)eh->e_shoff);
		return -EINVAL;
	}
	sh = (const Elf64_Shdr *)(r->map + eh->e_shoff);
	/* Counts that do not fit the ELF header live in section 0. */
	if (n == 0)
		n = sh[0].sh_size;
	if (strndx == SHN_XINDEX)
		strndx = sh[0].sh_link;
	if (n > (r->size - eh->e_shoff) / sizeof(Elf64_Shdr)) {
		set_err(img,
			"%s: section header table (%llu entries at offset 0x%llx) extends past end "
			"of file",
			r->path, (unsigned long long)n, (unsigned long long)eh->e_shoff);
		return -EINVAL;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (sh[i].sh_type == SHT_NOBITS || sh[i].sh_type == SHT_NULL)
			continue;
		if (!in_range(sh[i].sh_offset, sh[i].sh_size, r->size)) {
			set_err(img,
				"%s: section header %llu extends past end of file (offset 0x%llx, "
				"size 0x%llx)",
				r->path, (unsigned long long)i, (unsigned long long)sh[i].sh_offset,
				(unsigned long long)sh[i].sh_size);
			return -EINVAL;
		}
	}
	r->sh = sh;
	r->shnum = n;
	if (strndx != SHN_UNDEF) {
		if (strndx >= n || sh[strndx].sh_type != SHT_STRTAB) {
			set_err(img, "%s: bad section name table index %llu", r->path,
				(unsigned long long)strndx);
			return -EINVAL;
		}
		r->shstr = (const char *)r->map + sh[strndx].sh_offset;
		r->shstr_size = sh[strndx].sh_size;
	}
	return 0;
}

/* Pick the GNU build-id out of a note area; notes are 4- or 8-aligned. */
static void parse_notes(struct elf_image *img, const unsigned char *p, uint64_t size,
			uint64_t align)
{
	uint64_t off = 0;

	align = align == 8 ? 8 : 4;
	while (in_range(off, sizeof(Elf64_Nhdr), size)) {
		Elf64_Nhdr nh;
		uint64_t name_off, desc_off, next;

		memcpy(&nh, p + off, sizeof(nh));
		name_off = off + sizeof(nh);
		desc_off = name_off + ((nh.n_namesz + align - 1) & ~(align - 1));
		next = desc_off + ((nh.n_descsz + align - 1) & ~(align - 1));
		if (!in_range(name_off, nh.n_namesz, size) || desc_off > size ||
		    !in_range(desc_off, nh.n_descsz, size))
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= sizeof(img->build_id)) {
			memcpy(img->build_id, p + desc_off, nh.n_descsz);
			img->build_id_len = nh.n_descsz;
			return;
		}
		if (next <= off)
			return;
		off = next;
	}
}

static int load_phdrs(struct elf_image *img, struct reader *r)
{
	const Elf64_Ehdr *eh = r->eh;
	const Elf64_Phdr *ph;
	uint64_t n = eh->e_phnum;

	if (n == PN_XNUM && r->sh)
		n = r->sh[0].sh_info;
	if (n == 0 || eh->e_phoff == 0) {
		set_err(img, "%s: no program headers", r->path);
		return -EINVAL;
	}
	if (eh->e_phentsize != sizeof(Elf64_Phdr)) {
		set_err(img, "%s: unexpected program header size %u", r->path, eh->e_phentsize);
		return -EINVAL;
	}
	if (eh->e_phoff % sizeof(uint64_t) ||
	    !in_range(eh->e_phoff, n * sizeof(Elf64_Phdr), r->size) ||
	    n > r->size / sizeof(Elf64_Phdr)) {
		set_err(img,
			"%s: program header table (%llu entries at offset 0x%llx) extends past end "
			"of file",
			r->path, (unsigned long long)n, (unsigned long long)eh->e_phoff);
		return -EINVAL;
	}
	ph = (const Elf64_Phdr *)(r->map + eh->e_phoff);
	img->segs = calloc(n, sizeof(*img->segs));
	if (!img->segs)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		const Elf64_Phdr *p = &ph[i];

		if (p->p_type != PT_LOAD && p->p_type != PT_NOTE && p->p_type != PT_INTERP &&
		    p->p_type != PT_DYNAMIC)
			continue;
		if (!in_range(p->p_offset, p->p_filesz, r->size) ||
		    (p->p_type == PT_LOAD &&
		     (p->p_filesz > p->p_memsz || p->p_vaddr + p->p_memsz < p->p_vaddr))) {
			set_err(img,
				"%s: program header %llu extends past end of file (offset 0x%llx, "
				"size 0x%llx)",
				r->path, (unsigned long long)i, (unsigned long long)p->p_offset,
				(unsigned long long)p->p_filesz);
			return -EINVAL;
		}
		if (p->p_type == PT_LOAD) {
			struct elf_load_seg *s = &img->segs[img->nsegs++];

			s->vaddr = p->p_vaddr;
			s->memsz = p->p_memsz;
			s->offset = p->p_offset;
			s->filesz = p->p_filesz;
			s->flags = p->p_flags;
		} else if (p->p_type == PT_NOTE && !img->build_id_len) {
			parse_notes(img, r->map + p->p_offset, p->p_filesz, p->p_align);
		} else if (p->p_type == PT_INTERP && !img->interp && p->p_filesz > 1) {
			img->interp = strndup((const char *)r->map + p->p_offset, p->p_filesz);
			if (!img->interp)
				return -ENOMEM;
		} else if (p->p_type == PT_DYNAMIC) {
			for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= p->p_filesz;
			     o += sizeof(Elf64_Dyn)) {
				Elf64_Dyn d;

				memcpy(&d, r->map + p->p_offset + o, sizeof(d));
				if (d.d_tag == DT_NULL)
					break;
				img->nneeded += d.d_tag == DT_NEEDED;
			}
		}
	}
	if (!img->nsegs) {
		set_err(img, "%s: no loadable segment", r->path);
		return -EINVAL;
	}
	/* Fall back to the note section when no PT_NOTE carried the id. */
	for (size_t i = 0; !img->build_id_len && i < r->shnum; i++)
		if (r->sh[i].sh_type == SHT_NOTE)
			parse_notes(img, r->map + r->sh[i].sh_offset, r->sh[i].sh_size,
				    r->sh[i].sh_addralign);
	return 0;
}

/* ---- functions ----------------------------------------------------------- */

static int add_name(struct elf_image *img, size_t *cap, const char *s, uint32_t *off)
{
	size_t len = strlen(s) + 1;

	if (img->names_len + len > UINT32_MAX)
		return -ENOMEM;
	if (img->names_len + len > *cap) {
		size_t ncap = *cap ? *cap : 4096;
		char *p;

		while (ncap < img->names_len + len)
			ncap *= 2;
		p = realloc(img->names, ncap);
		if (!p)
			return -ENOMEM;
		img->names = p;
		*cap = ncap;
	}
	memcpy(img->names + img->names_len, s, len);
	*off = img->names_len;
	img->names_len += len;
	return 0;
}

/*
 * Collect the function symbols of the symbol table section SYMIDX of reader R
 * (which may be the separate debug file). Damage in the table is reported.
 */
static int read_syms(struct elf_image *img, const struct reader *r, size_t symidx)
{
	const Elf64_Shdr *s = &r->sh[symidx], *strs;
	const char *strtab;
	size_t n, cap = img->names_len, fcap = 0;

	if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= r->shnum ||
	    r->sh[s->sh_link].sh_type != SHT_STRTAB) {
		set_err(img, "%s: symbol table in section %zu is malformed", r->path, symidx);
		return -EINVAL;
	}
	strs = &r->sh[s->sh_link];
	strtab = (const char *)r->map + strs->sh_offset;
	n = s->sh_size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		const char *name;
		struct elf_func *f;
		int type, bind, err;

		memcpy(&sym, r->map + s->sh_offset + i * sizeof(sym), sizeof(sym));
		type = ELF64_ST_TYPE(sym.st_info);
		bind = ELF64_ST_BIND(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;
		name = tab_str(strtab, strs->sh_size, sym.st_name);
		if (!name) {
			set_err(img, "%s: symbol %zu has a name outside its string table", r->path,
				i);
			return -EINVAL;
		}
		if (img->nfuncs == fcap) {
			size_t nc = fcap ? fcap * 2 : 256;
			struct elf_func *p = realloc(img->funcs, nc * sizeof(*p));

			if (!p)
				return -ENOMEM;
			img->funcs = p;
			fcap = nc;
		}
		f = &img->funcs[img->nfuncs];
		err = add_name(img, &cap, name, &f->name);
		if (err)
			return err;
		f->addr = sym.st_value;
		f->size = sym.st_size;
		f->global = bind == STB_GLOBAL || bind == STB_WEAK;
		img->nfuncs++;
	}
	return 0;
}

static int func_cmp(const void *a, const void *b)
{
	const struct elf_func *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->global != y->global)
		return y->global - x->global;			   /* global first */
	return x->size < y->size ? 1 : x->size > y->size ? -1 : 0; /* then larger */
}

/* Sort, merge aliases (the first of a group is the preferred name) and give
 * size-0 functions the room up to the next function or segment end. */
static void sort_funcs(struct elf_image *img)
{
	size_t j = 0;

	if (!img->nfuncs)
		return;
	qsort(img->funcs, img->nfuncs, sizeof(*img->funcs), func_cmp);
	for (size_t i = 1; i < img->nfuncs; i++) {
		if (img->funcs[i].addr == img->funcs[j].addr) {
			if (img->funcs[i].size > img->funcs[j].size)
				img->funcs[j].size = img->funcs[i].size;
			continue;
		}
		img->funcs[++j] = img->funcs[i];
	}
	img->nfuncs = j + 1;
}

/* The symbol size, as opposed to the size-0 extension done later. */
static uint64_t *sym_sizes(const struct elf_image *img)
{
	uint64_t *sz = malloc((img->nfuncs ? img->nfuncs : 1) * sizeof(*sz));

	if (sz)
		for (size_t i = 0; i < img->nfuncs; i++)
			sz[i] = img->funcs[i].size;
	return sz;
}

static void extend_zero_sizes(struct elf_image *img)
{
	for (size_t i = 0; i < img->nfuncs; i++) {
		struct elf_func *f = &img->funcs[i];
		const struct elf_load_seg *s;

		if (f->size)
			continue;
		if (i + 1 < img->nfuncs) {
			f->size = img->funcs[i + 1].addr - f->addr;
		} else if ((s = seg_of(img, f->addr, 1, 0)) != NULL) {
			f->size = s->vaddr + s->memsz - f->addr;
		}
	}
}

static int map_file(const char *path, struct reader *r, int *fdp)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	r->size = st.st_size;
	r->map = NULL;
	if (r->size) {
		void *m = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED) {
			int err = -errno;

			close(fd);
			return err;
		}
		r->map = m;
	}
	*fdp = fd;
	return 0;
}

static void unmap_file(struct reader *r, int fd)
{
	if (r->map)
		munmap((void *)r->map, r->size);
	if (fd >= 0)
		close(fd);
	r->map = NULL;
}

static size_t find_section(const struct reader *r, uint32_t type)
{
	for (size_t i = 1; i < r->shnum; i++)
		if (r->sh[i].sh_type == type)
			return i;
	return 0;
}

/* The .symtab of /usr/lib/debug/.build-id/xx/yyyy.debug, if it exists and is
 * sound; anything wrong with it just means no debug names. */
static int try_debug_file(struct elf_image *img)
{
	static const char hex[] = "0123456789abcdef";
	char path[64 + 2 * sizeof(img->build_id)], *p;
	struct reader d = {0};
	struct elf_image tmp = {0};
	const struct elf_arch *arch;
	int fd = -1, ret = -ENOENT;
	size_t idx;

	if (img->build_id_len < 2)
		return -ENOENT;
	p = path + sprintf(path, "/usr/lib/debug/.build-id/%c%c/", hex[img->build_id[0] >> 4],
			   hex[img->build_id[0] & 15]);
	for (size_t i = 1; i < img->build_id_len; i++) {
		*p++ = hex[img->build_id[i] >> 4];
		*p++ = hex[img->build_id[i] & 15];
	}
	strcpy(p, ".debug");
	if (map_file(path, &d, &fd) < 0)
		return -ENOENT;
	d.path = path;
	if (check_ehdr(&tmp, &d, &arch) == 0 && load_shdrs(&tmp, &d) == 0 &&
	    (idx = find_section(&d, SHT_SYMTAB)) != 0) {
		size_t keep_funcs = img->nfuncs, keep_names = img->names_len;

		ret = read_syms(img, &d, idx);
		if (!ret && img->nfuncs == keep_funcs)
			ret = -ENOENT; /* no functions: use .dynsym after all */
		if (ret) {
			img->nfuncs = keep_funcs;
			img->names_len = keep_names;
			img->err[0] = 0;
		}
	}
	unmap_file(&d, fd);
	return ret;
}

static int load_funcs(struct elf_image *img, struct reader *r)
{
	size_t idx = find_section(r, SHT_SYMTAB);
	int err;

	if (idx) {
		img->has_symtab = 1;
		err = read_syms(img, r, idx);
	} else if (try_debug_file(img) == 0) {
		img->has_symtab = 1;
		err = 0;
	} else {
		idx = find_section(r, SHT_DYNSYM);
		err = idx ? read_syms(img, r, idx) : 0;
	}
	if (!err)
		sort_funcs(img);
	return err;
}

int32_t elf_func_lookup(const struct elf_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nfuncs;

	/* Last function starting at or before ADDR. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->funcs[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	lo--;
	if (addr - img->funcs[lo].addr >= img->funcs[lo].size)
		return -1;
	return (int32_t)lo;
}

const char *elf_func_name(const struct elf_image *img, int32_t func)
{
	if (func < 0 || (size_t)func >= img->nfuncs)
		return NULL;
	return img->names + img->funcs[func].name;
}

/* ---- records ------------------------------------------------------------ */

struct rec {
	uint64_t where; /* link-time address of the entry */
	uint64_t value;
	uint8_t kind;
};

/*
 * For a file: apply the dynamic RELA relocations that land on record entries.
 * RELR (DT_RELR, .relr.dyn) needs nothing: a packed relative relocation only
 * adds the bias to the link-time address already stored in place. Likewise
 * GNU ld stores RELA addends in place, but other linkers (lld) store 0.
 */
static int apply_relocs(struct elf_image *img, const struct reader *r, struct rec *recs,
			size_t nrecs, uint64_t lo, uint64_t hi)
{
	for (size_t i = 1; i < r->shnum; i++) {
		const Elf64_Shdr *s = &r->sh[i];
		const Elf64_Shdr *sym = NULL;
		size_t n;

		if (s->sh_type != SHT_RELA || !(s->sh_flags & SHF_ALLOC))
			continue;
		if (s->sh_entsize != sizeof(Elf64_Rela)) {
			set_err(img, "%s: relocation section %zu (%s) has entry size %llu", r->path,
				i, sec_name(r, i), (unsigned long long)s->sh_entsize);
			return -EINVAL;
		}
		if (s->sh_link && s->sh_link < r->shnum &&
		    r->sh[s->sh_link].sh_entsize == sizeof(Elf64_Sym) &&
		    r->sh[s->sh_link].sh_type != SHT_NOBITS)
			sym = &r->sh[s->sh_link];
		n = s->sh_size / sizeof(Elf64_Rela);
		for (size_t j = 0; j < n; j++) {
			Elf64_Rela rel;
			uint64_t value, k;

			memcpy(&rel, r->map + s->sh_offset + j * sizeof(rel), sizeof(rel));
			if (rel.r_offset < lo || rel.r_offset >= hi)
				continue;
			switch (ELF64_R_TYPE(rel.r_info)) {
			case R_X86_64_RELATIVE:
				value = rel.r_addend;
				break;
			case R_X86_64_64: {
				Elf64_Sym sy;
				uint64_t si = ELF64_R_SYM(rel.r_info);

				if (!sym || si >= sym->sh_size / sizeof(sy))
					continue;
				memcpy(&sy, r->map + sym->sh_offset + si * sizeof(sy), sizeof(sy));
				if (sy.st_shndx == SHN_UNDEF)
					continue;
				value = sy.st_value + rel.r_addend;
				break;
			}
			default:
				continue;
			}
			/* recs are sorted by where: binary search the entry */
			size_t a = 0, b = nrecs;

			while (a < b) {
				k = a + (b - a) / 2;
				if (recs[k].where < rel.r_offset)
					a = k + 1;
				else
					b = k;
			}
			if (a < nrecs && recs[a].where == rel.r_offset)
				recs[a].value = value;
		}
	}
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->where < y->where ? -1 : x->where > y->where;
}

static int read_records(struct elf_image *img, struct reader *r, struct rec **out, size_t *nout)
{
	struct rec *recs = NULL;
	size_t n = 0;
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 1; i < r->shnum; i++) {
		const Elf64_Shdr *s = &r->sh[i];
		const char *name = sec_name(r, i);
		uint8_t kind;
		size_t cnt;
		struct rec *p;

		if (!strcmp(name, "__patchable_function_entries"))
			kind = SITE_PATCHABLE;
		else if (!strcmp(name, "__mcount_loc"))
			kind = SITE_FENTRY;
		else
			continue;
		if (s->sh_type == SHT_NOBITS || !s->sh_size)
			continue;
		if (s->sh_size % 8) {
			set_err(img, "%s: section %zu (%s) size 0x%llx is not a multiple of 8",
				r->path, i, name, (unsigned long long)s->sh_size);
			goto inval;
		}
		if (!(s->sh_flags & SHF_ALLOC) || !seg_of(img, s->sh_addr, s->sh_size, 0)) {
			set_err(img,
				"%s: section %zu (%s) at 0x%llx is not inside a loaded segment",
				r->path, i, name, (unsigned long long)s->sh_addr);
			goto inval;
		}
		cnt = s->sh_size / 8;
		p = realloc(recs, (n + cnt) * sizeof(*recs));
		if (!p) {
			free(recs);
			return -ENOMEM;
		}
		recs = p;
		for (size_t j = 0; j < cnt; j++) {
			uint64_t v;

			if (r->mem)
				v = get64((const void *)(uintptr_t)(r->bias + s->sh_addr + 8 * j)) -
				    r->bias;
			else
				v = get64(r->map + s->sh_offset + 8 * j);
			recs[n].where = s->sh_addr + 8 * j;
			recs[n].value = v;
			recs[n].kind = kind;
			n++;
		}
		if (s->sh_addr < lo)
			lo = s->sh_addr;
		if (s->sh_addr + s->sh_size > hi)
			hi = s->sh_addr + s->sh_size;
	}
	if (n && !r->mem && img->type == ET_DYN) {
		int err;

		qsort(recs, n, sizeof(*recs), rec_cmp);
		err = apply_relocs(img, r, recs, n, lo, hi);
		if (err) {
			free(recs);
			return err;
		}
	}
	*out = recs;
	*nout = n;
	return 0;
inval:
	free(recs);
	return -EINVAL;
}

static int site_cmp(const void *a, const void *b)
{
	const struct elf_site *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The function starting in (r, r + PREFIX_PAD_MAX], or -1. */
static int32_t func_after(const struct elf_image *img, uint64_t r)
{
	size_t lo = 0, hi = img->nfuncs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->funcs[mid].addr <= r)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < img->nfuncs && img->funcs[lo].addr - r <= PREFIX_PAD_MAX)
		return (int32_t)lo;
	return -1;
}

/* Is R inside function F by the symbol's own size (not the extension)? */
static int covered(const struct elf_image *img, const uint64_t *symsz, uint64_t r)
{
	int32_t f = elf_func_lookup(img, r);

	return f >= 0 && r - img->funcs[f].addr < symsz[f];
}

static int make_sites(struct elf_image *img, struct reader *r, const struct elf_arch *arch,
		      struct rec *recs, size_t n)
{
	uint64_t *symsz = sym_sizes(img);
	size_t j = 0;

	if (!symsz)
		return -ENOMEM;
	extend_zero_sizes(img);
	img->sites = calloc(n ? n : 1, sizeof(*img->sites));
	if (!img->sites) {
		free(symsz);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct elf_site *s = &img->sites[j];
		const struct elf_load_seg *seg;
		uint64_t v = recs[i].value;
		int32_t f;

		if (!is_exec_addr(img, v, !r->mem)) {
			img->nbad++;
			continue;
		}
		s->addr = v;
		s->record = v;
		/* A record outside every function (by its symbol size) but
		 * just before one is the prefix-pad case: the site is the
		 * function's entry. */
		if (!covered(img, symsz, v) && (f = func_after(img, v)) >= 0)
			s->addr = img->funcs[f].addr;
		s->kind = recs[i].kind;
		arch->fix_site(img, s, arch_read, arch_func_start, r);
		seg = seg_of(img, s->addr, s->len, !r->mem);
		if (!seg || !(seg->flags & PF_X)) {
			img->nbad++;
			continue;
		}
		s->func = elf_func_lookup(img, s->addr);
		j++;
	}
	free(symsz);
	qsort(img->sites, j, sizeof(*img->sites), site_cmp);
	img->nsites = 0;
	for (size_t i = 0; i < j; i++)
		if (!img->nsites || img->sites[img->nsites - 1].addr != img->sites[i].addr)
			img->sites[img->nsites++] = img->sites[i];
	return 0;
}

/* ---- entry points --------------------------------------------------------- */

int elf_load(struct elf_image *img, const char *path, uintptr_t bias, int mem)
{
	struct reader r = {0};
	const struct elf_arch *arch;
	struct rec *recs = NULL;
	size_t nrecs = 0;
	int fd = -1, err;

	memset(img, 0, sizeof(*img));
	img->path = strdup(path);
	if (!img->path)
		return -ENOMEM;
	r.path = path;
	r.bias = bias;
	r.mem = mem;
	err = map_file(path, &r, &fd);
	if (err) {
		if (err == -EINVAL)
			set_err(img, "%s: not a regular file", path);
		else
			set_err(img, "%s: %s", path, strerror(-err));
		return err;
	}
	err = check_ehdr(img, &r, &arch);
	if (!err)
		err = load_shdrs(img, &r);
	if (!err)
		err = load_phdrs(img, &r);
	if (!err)
		err = load_funcs(img, &r);
	if (!err)
		err = read_records(img, &r, &recs, &nrecs);
	if (!err) {
		img->nrecords = nrecs;
		err = make_sites(img, &r, arch, recs, nrecs);
	}
	free(recs);
	unmap_file(&r, fd);
	if (err) {
		if (err == -ENOMEM && !img->err[0])
			set_err(img, "%s: out of memory", path);
		/* keep the message, drop the rest */
		char msg[sizeof(img->err)];

		memcpy(msg, img->err, sizeof(msg));
		elf_free(img);
		memcpy(img->err, msg, sizeof(msg));
		return err;
	}
	if (!img->has_symtab) {
		size_t unnamed = 0;

		for (size_t i = 0; i < img->nsites; i++)
			unnamed += img->sites[i].func < 0;
		set_err(img,
			"%s is stripped: function names come from .dynsym only (%zu of %zu sites "
			"unnamed)",
			path, unnamed, img->nsites);
	}
	return 0;
}

void elf_free(struct elf_image *img)
{
	free(img->path);
	free(img->segs);
	free(img->funcs);
	free(img->names);
	free(img->sites);
	free(img->interp);
	memset(img, 0, sizeof(*img));
}
