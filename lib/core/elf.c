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
    &elf_arch_aarch64,
    &elf_arch_riscv64,
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
		set_err(img, "%s: not an x86-64, aarch64 or riscv64 ELF object", r->path);
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

/* Add the first N bytes of S to the names, NUL-terminated. */
static int add_name_n(struct elf_image *img, size_t *cap, const char *s, size_t n, uint32_t *off)
{
	size_t len = n + 1;

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
	memcpy(img->names + img->names_len, s, n);
	img->names[img->names_len + n] = '\0';
	*off = img->names_len;
	img->names_len += len;
	return 0;
}

static int add_name(struct elf_image *img, size_t *cap, const char *s, uint32_t *off)
{
	return add_name_n(img, cap, s, strlen(s), off);
}

/*
 * A symbol's name without the version the assembler's .symver gave it in
 * .symtab ("fclose@@GLIBC_2.2.5", "memcpy@GLIBC_2.2.5"): the function is
 * the one users name, and '@' in a pattern names an object. No mangled
 * name holds an '@'.
 */
static size_t sym_name_len(const char *s)
{
	const char *at = strchr(s, '@');
	return at && at != s ? (size_t)(at - s) : strlen(s);
}

static int add_sym_name(struct elf_image *img, size_t *cap, const char *s, uint32_t *off)
{
	return add_name_n(img, cap, s, sym_name_len(s), off);
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
		err = add_sym_name(img, &cap, name, &f->name);
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

/* /usr/lib/debug/.build-id/xx/yyyy.debug, the separate debug file of IMG;
 * -ENOENT without a build-id. */
#define DEBUG_PATH_MAX (64 + 2 * sizeof(((struct elf_image *)0)->build_id))
static int debug_path(const struct elf_image *img, char path[DEBUG_PATH_MAX])
{
	static const char hex[] = "0123456789abcdef";
	char *p;

	if (img->build_id_len < 2)
		return -ENOENT;
	p = path + sprintf(path, "/usr/lib/debug/.build-id/%c%c/", hex[img->build_id[0] >> 4],
			   hex[img->build_id[0] & 15]);
	for (size_t i = 1; i < img->build_id_len; i++) {
		*p++ = hex[img->build_id[i] >> 4];
		*p++ = hex[img->build_id[i] & 15];
	}
	strcpy(p, ".debug");
	return 0;
}

/* The .symtab of the debug file, if it exists and is sound; anything wrong
 * with it just means no debug names. */
static int try_debug_file(struct elf_image *img)
{
	char path[DEBUG_PATH_MAX];
	struct reader d = {0};
	struct elf_image tmp = {0};
	const struct elf_arch *arch;
	int fd = -1, ret = -ENOENT;
	size_t idx;

	if (debug_path(img, path))
		return -ENOENT;
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
static int apply_relocs(struct elf_image *img, const struct reader *r, const struct elf_arch *arch,
			struct rec *recs, size_t nrecs, uint64_t lo, uint64_t hi)
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
			uint32_t type = ELF64_R_TYPE(rel.r_info);
			if (type == arch->rel_relative) {
				value = rel.r_addend;
			} else if (type == arch->rel_abs64) {
				Elf64_Sym sy;
				uint64_t si = ELF64_R_SYM(rel.r_info);

				if (!sym || si >= sym->sh_size / sizeof(sy))
					continue;
				memcpy(&sy, r->map + sym->sh_offset + si * sizeof(sy), sizeof(sy));
				if (sy.st_shndx == SHN_UNDEF)
					continue;
				value = sy.st_value + rel.r_addend;
			} else {
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

static int read_records(struct elf_image *img, struct reader *r, const struct elf_arch *arch,
			struct rec **out, size_t *nout)
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
		err = apply_relocs(img, r, arch, recs, n, lo, hi);
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
	/* A record the linker resolved against a dropped section holds 0 (or
	 * little more): in a PIE that is the ELF header, in an executable
	 * segment on some targets. Code starts at the first code section. */
	uint64_t code_lo = UINT64_MAX;

	if (!symsz)
		return -ENOMEM;
	for (size_t i = 1; i < r->shnum; i++)
		if ((r->sh[i].sh_flags & SHF_EXECINSTR) && r->sh[i].sh_size &&
		    r->sh[i].sh_addr < code_lo)
			code_lo = r->sh[i].sh_addr;
	if (code_lo == UINT64_MAX)
		code_lo = 0;
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

		if (v < code_lo || !is_exec_addr(img, v, !r->mem)) {
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

/* Did gcc build any of it? Its .comment says so ("GCC: (Debian ...)"). */
static int built_by_gcc(const struct reader *r)
{
	static const char tag[] = "GCC: ";

	for (size_t i = 1; i < r->shnum; i++) {
		const Elf64_Shdr *s = &r->sh[i];

		if (s->sh_type == SHT_PROGBITS && !(s->sh_flags & SHF_ALLOC) &&
		    !strcmp(sec_name(r, i), ".comment") &&
		    in_range(s->sh_offset, s->sh_size, r->size) &&
		    memmem(r->map + s->sh_offset, s->sh_size, tag, sizeof(tag) - 1))
			return 1;
	}
	return 0;
}

/* Does a site start in [lo, hi)? */
static int site_within(const struct elf_image *img, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = img->nsites;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (img->sites[mid].addr < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < img->nsites && img->sites[a].addr < hi;
}

/*
 * gcc 12 writes one __patchable_function_entries (or __mcount_loc) section
 * per object file, tied by SHF_LINK_ORDER to the object's first function.
 * When the linker drops that function's COMDAT group (an inline function or
 * template another object also emitted), every record of the object goes
 * with it, and its functions keep their NOPs without a site. They are found
 * here: in an object with records, built by gcc, a function whose entry
 * holds the site the object's records describe is a site too.
 */
static int recover_sites(struct elf_image *img, struct reader *r, const struct elf_arch *arch)
{
	struct elf_site *add = NULL;
	size_t n = 0, cap = 0;

	if (!img->nsites || !built_by_gcc(r))
		return 0;
	const struct elf_site like = img->sites[0];
	/* Code bytes from the file, in the runtime too: the scan reads the
	 * page cache, not the process's text. */
	struct reader fr = *r;
	fr.mem = 0;
	for (size_t i = 0; i < img->nfuncs; i++) {
		const struct elf_func *f = &img->funcs[i];
		struct elf_site s = {0};

		/* A recorded site at the entry (after its marker) is the common
		 * case: decided without reading the code. */
		uint64_t span = f->size && f->size < PREFIX_PAD_MAX ? f->size : PREFIX_PAD_MAX;
		if (site_within(img, f->addr, f->addr + span) || !is_exec_addr(img, f->addr, 1) ||
		    !arch->entry_site(img, f->addr, &like, arch_read, &fr, &s) ||
		    !seg_of(img, s.addr, s.len, 1))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct elf_site *p = realloc(add, nc * sizeof(*p));
			if (!p) {
				free(add);
				return -ENOMEM;
			}
			add = p;
			cap = nc;
		}
		s.kind = like.kind;
		s.record = s.addr;
		s.func = (int32_t)i;
		add[n++] = s;
	}
	if (n) {
		struct elf_site *p = realloc(img->sites, (img->nsites + n) * sizeof(*p));
		if (!p) {
			free(add);
			return -ENOMEM;
		}
		img->sites = p;
		memcpy(img->sites + img->nsites, add, n * sizeof(*add));
		img->nsites += n;
		qsort(img->sites, img->nsites, sizeof(*img->sites), site_cmp);
		img->nrecovered = n;
	}
	free(add);
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
	img->bias = bias;
	img->mem = mem;
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
		err = read_records(img, &r, arch, &recs, &nrecs);
	/* In a process, an object without sites needs its names only if
	 * asked (elf_load_funcs): most of a program's libraries, at every
	 * exec. */
	if (!err && (nrecs || !mem))
		err = load_funcs(img, &r);
	else if (!err)
		img->funcs_deferred = 1;
	if (!err) {
		img->nrecords = nrecs;
		err = make_sites(img, &r, arch, recs, nrecs);
	}
	if (!err)
		err = recover_sites(img, &r, arch);
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
	if (!img->has_symtab && !img->funcs_deferred) {
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
	free(img->entries);
	free(img->estats);
	memset(img, 0, sizeof(*img));
}

/* ---- function entries ------------------------------------------------------
 *
 * Code not built with sites is traced by relocating its function entries; this
 * finds them: function symbols, and the FDEs of .eh_frame, which every
 * function compiled with unwind tables has (the x86-64 default) even in a
 * stripped file. Sections are read from the file in both modes.
 */

/* Pointer encodings of .eh_frame and .eh_frame_hdr (LSB, "DWARF Extensions"). */
#define PE_ABSPTR   0x00
#define PE_ULEB128  0x01
#define PE_UDATA2   0x02
#define PE_UDATA4   0x03
#define PE_UDATA8   0x04
#define PE_SLEB128  0x09
#define PE_SDATA2   0x0a
#define PE_SDATA4   0x0b
#define PE_SDATA8   0x0c
#define PE_PCREL    0x10
#define PE_DATAREL  0x30
#define PE_INDIRECT 0x80
#define PE_OMIT	    0xff

/* How far into a function a compiler site may lie (after the CET branch
 * target marker and a site marker). */
#define SITE_WINDOW 16

/* A candidate entry before merging; NAME points into a mapped file. */
struct cand {
	uint64_t addr, size;
	const char *name; /* NULL: from an FDE */
	uint8_t src, flags;
};

struct cands {
	struct cand *v;
	size_t n, cap;
};

static int cand_add(struct cands *c, uint64_t addr, uint64_t size, const char *name, uint8_t src,
		    uint8_t flags)
{
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 1024;
		struct cand *p = realloc(c->v, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->v = p;
		c->cap = nc;
	}
	c->v[c->n++] = (struct cand){addr, size, name, src, flags};
	return 0;
}

/* Function symbols of section SYMIDX of R (the object or its debug file),
 * except those in non-executable sections (data marked STT_FUNC). */
static int entry_syms(struct elf_image *img, struct cands *c, const struct reader *r, size_t symidx,
		      uint8_t src)
{
	const Elf64_Shdr *s = &r->sh[symidx], *strs;
	size_t n;

	if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link >= r->shnum ||
	    r->sh[s->sh_link].sh_type != SHT_STRTAB) {
		set_err(img, "%s: symbol table in section %zu is malformed", r->path, symidx);
		return -EINVAL;
	}
	strs = &r->sh[s->sh_link];
	n = s->sh_size / sizeof(Elf64_Sym);
	for (size_t i = 1; i < n; i++) {
		Elf64_Sym sym;
		const char *name;
		uint8_t flags = 0;
		int type, bind;

		memcpy(&sym, r->map + s->sh_offset + i * sizeof(sym), sizeof(sym));
		type = ELF64_ST_TYPE(sym.st_info);
		bind = ELF64_ST_BIND(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;
		if (sym.st_shndx < SHN_LORESERVE && sym.st_shndx < r->shnum &&
		    !(r->sh[sym.st_shndx].sh_flags & SHF_EXECINSTR))
			continue;
		name = tab_str((const char *)r->map + strs->sh_offset, strs->sh_size, sym.st_name);
		if (!name) {
			set_err(img, "%s: symbol %zu has a name outside its string table", r->path,
				i);
			return -EINVAL;
		}
		if (type == STT_GNU_IFUNC)
			flags |= ENTRY_IFUNC;
		if (bind == STB_GLOBAL || bind == STB_WEAK)
			flags |= ENTRY_GLOBAL;
		if (cand_add(c, sym.st_value, sym.st_size, name, src, flags))
			return -ENOMEM;
	}
	return 0;
}

/* .symtab, else the debug file's (mapped into D, kept until the names are
 * copied), else .dynsym. */
static int entry_symbols(struct elf_image *img, struct cands *c, const struct reader *r,
			 struct reader *d, int *dfd)
{
	char path[DEBUG_PATH_MAX]; /* only for messages, which are dropped */
	size_t idx = find_section(r, SHT_SYMTAB);

	if (idx)
		return entry_syms(img, c, r, idx, ENTRY_SYMTAB);
	if (debug_path(img, path) == 0 && map_file(path, d, dfd) == 0) {
		struct elf_image tmp = {0};
		const struct elf_arch *arch;

		d->path = path;
		if (check_ehdr(&tmp, d, &arch) == 0 && load_shdrs(&tmp, d) == 0 &&
		    (idx = find_section(d, SHT_SYMTAB)) != 0 &&
		    entry_syms(&tmp, c, d, idx, ENTRY_SYMTAB) == 0 && c->n) {
			d->path = NULL;
			return 0;
		}
		c->n = 0; /* a damaged debug file only means no debug names */
		d->path = NULL;
	}
	idx = find_section(r, SHT_DYNSYM);
	return idx ? entry_syms(img, c, r, idx, ENTRY_DYNSYM) : 0;
}

/* Bytes of .eh_frame or .eh_frame_hdr, ADDR being the link-time address of P[0]. */
struct ehview {
	const unsigned char *p;
	uint64_t size;
	uint64_t addr;
	const struct elf_arch *arch; /* whose unwind rule at an entry (cie_odd) */
};

static int get_fixed(const struct ehview *v, uint64_t *off, unsigned n, int sign, uint64_t *out)
{
	uint64_t val = 0;

	if (!in_range(*off, n, v->size))
		return -1;
	memcpy(&val, v->p + *off, n); /* little-endian, checked in check_ehdr */
	if (sign && n < 8 && (val >> (8 * n - 1)) & 1)
		val |= ~0ULL << (8 * n);
	*off += n;
	*out = val;
	return 0;
}

static int get_leb(const struct ehview *v, uint64_t *off, int sign, uint64_t *out)
{
	uint64_t val = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*off >= v->size || shift >= 70)
			return -1;
		b = v->p[(*off)++];
		if (shift < 64)
			val |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		val |= ~0ULL << shift;
	*out = val;
	return 0;
}

/* A value in format ENC & 0x0f, without applying anything. */
static int get_raw(const struct ehview *v, uint64_t *off, uint8_t enc, uint64_t *out)
{
	switch (enc & 0x0f) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return get_fixed(v, off, 8, 0, out);
	case PE_UDATA2:
		return get_fixed(v, off, 2, 0, out);
	case PE_SDATA2:
		return get_fixed(v, off, 2, 1, out);
	case PE_UDATA4:
		return get_fixed(v, off, 4, 0, out);
	case PE_SDATA4:
		return get_fixed(v, off, 4, 1, out);
	case PE_ULEB128:
		return get_leb(v, off, 0, out);
	case PE_SLEB128:
		return get_leb(v, off, 1, out);
	}
	return -1;
}

/*
 * A pointer of encoding ENC, as a link-time address. DATAREL is the base of
 * datarel pointers (0: none here). Indirect pointers name a pointer in
 * memory, which the file does not hold relocated: refused, as are textrel,
 * funcrel and aligned, which no x86-64 toolchain emits for these fields.
 */
static int get_enc(const struct ehview *v, uint64_t *off, uint8_t enc, uint64_t datarel,
		   uint64_t *out)
{
	uint64_t at = *off;

	if (enc == PE_OMIT || (enc & PE_INDIRECT) || get_raw(v, off, enc, out))
		return -1;
	switch (enc & 0x70) {
	case PE_ABSPTR:
		return 0;
	case PE_PCREL:
		*out += v->addr + at;
		return 0;
	case PE_DATAREL:
		if (!datarel)
			return -1;
		*out += datarel;
		return 0;
	}
	return -1;
}

/* A record's length field at OFF: 1 for the terminator, 0 with its body and
 * end, -1 when damaged. WIDE: the 64-bit DWARF format (8-byte ids). */
static int rec_bounds(const struct ehview *v, uint64_t off, uint64_t *body, uint64_t *end,
		      int *wide)
{
	uint64_t len;

	if (get_fixed(v, &off, 4, 0, &len))
		return -1;
	*wide = len == 0xffffffff;
	if (*wide && get_fixed(v, &off, 8, 0, &len))
		return -1;
	if (len == 0)
		return 1;
	if (!in_range(off, len, v->size))
		return -1;
	*body = off;
	*end = off + len;
	return 0;
}

struct cie {
	uint8_t fde_enc; /* 'R' */
	uint8_t zaug;	 /* 'z': FDEs carry an augmentation length */
	uint8_t signal;	 /* 'S': a signal frame */
	uint8_t odd;	 /* its initial rule is not the one at a call (see cie_odd) */
};

/*
 * Is the CIE's initial program other than the architecture's rule at a
 * call (struct elf_arch: x86-64 CFA = rsp + 8, return address (r16) at
 * CFA - 8; aarch64 CFA = sp, the return address in x30; riscv64 CFA = sp,
 * which its gcc states as def_cfa_register alone)? _start's says
 * the return address is undefined; anything unusual makes its FDEs'
 * starts doubtful entries.
 */
static int cie_odd(const struct ehview *b, uint64_t o, int64_t daf)
{
	uint64_t reg, off;
	const struct elf_arch *a = b->arch;

	if (!a)
		return 1;
	while (o < b->size) {
		uint8_t op = b->p[o++];

		if (op == 0x00) /* nop */
			continue;
		if (op == 0x0c) { /* def_cfa reg, offset */
			if (get_leb(b, &o, 0, &reg) || get_leb(b, &o, 0, &off) ||
			    reg != a->cfa_reg || off != a->cfa_off)
				return 1;
			continue;
		}
		if (op == 0x0d) { /* def_cfa_register reg: the offset stays 0 (riscv64's gcc) */
			if (get_leb(b, &o, 0, &reg) || reg != a->cfa_reg || a->cfa_off != 0)
				return 1;
			continue;
		}
		if (a->ra_saved >= 0 &&
		    op == (0x80 | a->ra_saved)) { /* offset rRA, factored offset */
			if (get_leb(b, &o, 0, &off) || (int64_t)off * daf != -8)
				return 1;
			continue;
		}
		return 1;
	}
	return 0;
}

static int parse_cie(const struct ehview *v, uint64_t off, struct cie *c)
{
	uint64_t body, end, o, id, ver, x, daf, dend;
	const char *aug;
	size_t alen;
	int wide;

	if (rec_bounds(v, off, &body, &end, &wide))
		return -1;
	struct ehview b = {v->p, end, v->addr, v->arch}; /* reads stop at the record's end */
	o = body;
	if (get_fixed(&b, &o, wide ? 8 : 4, 0, &id) || id != 0 || get_fixed(&b, &o, 1, 0, &ver) ||
	    ver == 0 || ver > 4)
		return -1;
	aug = (const char *)b.p + o;
	if (!memchr(aug, 0, end - o))
		return -1;
	alen = strlen(aug);
	o += alen + 1;
	c->fde_enc = PE_ABSPTR;
	c->zaug = 0;
	c->signal = 0;
	if (aug[0] == 'e' && aug[1] == 'h') { /* gcc 2.x: an 8-byte pointer */
		o += 8;
		aug += 2;
	}
	if (ver == 4)
		o += 2; /* address and segment selector sizes */
	if (o > end || get_leb(&b, &o, 0, &x) || get_leb(&b, &o, 1, &daf) ||
	    (ver == 1 ? get_fixed(&b, &o, 1, 0, &x) : get_leb(&b, &o, 0, &x)))
		return -1;
	if (aug[0] != 'z') {
		c->odd = cie_odd(&b, o, (int64_t)daf);
		return aug[0] ? -1 : 0; /* without 'z' nothing else can be skipped */
	}
	c->zaug = 1;
	if (get_leb(&b, &o, 0, &x) || !in_range(o, x, end))
		return -1;
	dend = o + x;
	struct ehview d = {v->p, dend, v->addr, v->arch};
	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'L':
			if (get_fixed(&d, &o, 1, 0, &x))
				return -1;
			break;
		case 'R':
			if (get_fixed(&d, &o, 1, 0, &x))
				return -1;
			c->fde_enc = x;
			break;
		case 'P': /* the personality: only skipped, so indirect is fine */
			if (get_fixed(&d, &o, 1, 0, &x) || (x != PE_OMIT && get_raw(&d, &o, x, &x)))
				return -1;
			break;
		case 'S':
			c->signal = 1;
			break;
		case 'B': /* AArch64 B-key, MTE tagged frames: no data */
		case 'G':
			break;
		default:
			return -1; /* the rest of the data cannot be found */
		}
	}
	c->odd = cie_odd(&b, dend, (int64_t)daf);
	return 0;
}

/*
 * Does the FDE's program change the CIE's rule before its first advance? A
 * function entered by a call has that rule at its first byte; a .cold part
 * jumped into has the frame of its parent.
 */
static int starts_midframe(const struct ehview *b, uint64_t o)
{
	uint64_t x;

	while (o < b->size) {
		uint8_t op = b->p[o++];

		if ((op & 0xc0) == 0x40 || (op >= 0x01 && op <= 0x04))
			return 0; /* advance_loc*, set_loc */
		if (op == 0x00)
			continue; /* nop */
		if (op == 0x2e) { /* GNU_args_size: no frame change */
			if (get_leb(b, &o, 0, &x))
				return 0;
			continue;
		}
		return 1;
	}
	return 0;
}

/* The FDE at OFF: 0 with its start, range and flags; 1 for a CIE; -1 when it
 * or its CIE is damaged or uses what is not decoded here. */
static int parse_fde(const struct ehview *v, uint64_t off, uint64_t *pc, uint64_t *range,
		     uint8_t *flags)
{
	uint64_t body, end, o, id, x;
	struct cie c;
	int wide;

	if (rec_bounds(v, off, &body, &end, &wide))
		return -1;
	struct ehview b = {v->p, end, v->addr, v->arch};
	o = body;
	if (get_fixed(&b, &o, wide ? 8 : 4, 0, &id))
		return -1;
	if (id == 0)
		return 1;
	if (id > body || parse_cie(v, body - id, &c)) /* the CIE pointer counts back */
		return -1;
	if (get_enc(&b, &o, c.fde_enc, 0, pc) || get_raw(&b, &o, c.fde_enc, range))
		return -1;
	if (c.zaug && (get_leb(&b, &o, 0, &x) || !in_range(o, x, end)))
		return -1;
	if (c.zaug)
		o += x;
	*flags = ENTRY_HAS_FDE;
	if (c.signal || c.odd || starts_midframe(&b, o))
		*flags |= ENTRY_MIDFRAME;
	return 0;
}

static int fde_add(struct elf_image *img, struct cands *c, const struct ehview *frame, uint64_t off,
		   uint64_t expect, int check)
{
	uint64_t pc, range;
	uint8_t flags;
	int t = parse_fde(frame, off, &pc, &range, &flags);

	if (t == 1)
		return 0;
	if (t < 0 || (check && pc != expect)) {
		img->estats->nfdes_bad++;
		return 0;
	}
	img->estats->nfdes++;
	return cand_add(c, pc, range, NULL, ENTRY_FDE, flags);
}

/* Every record of .eh_frame, in order, up to the terminator. */
static int walk_eh_frame(struct elf_image *img, struct cands *c, const struct ehview *frame)
{
	uint64_t off = 0, body, end;
	int wide, t;

	while (off + 4 <= frame->size) {
		t = rec_bounds(frame, off, &body, &end, &wide);
		if (t > 0)
			break;
		if (t < 0) {
			img->estats->nfdes_bad++; /* the rest cannot be found */
			break;
		}
		if (fde_add(img, c, frame, off, 0, 0))
			return -ENOMEM;
		off = end;
	}
	return 0;
}

/*
 * The binary-search table of .eh_frame_hdr: (start, FDE) pairs, datarel to
 * the header. Each FDE is still read for its range and checked to start where
 * the table says. Returns 1 when the header has no usable table (walk
 * .eh_frame instead), 0 or -ENOMEM. Finds .eh_frame in FRAME when unknown.
 */
static int use_eh_frame_hdr(struct elf_image *img, const struct reader *r, struct cands *c,
			    const struct ehview *hdr, struct ehview *frame)
{
	uint64_t o = 0, ver, fpe, cnte, tabe, fptr, count, loc, fde;

	if (get_fixed(hdr, &o, 1, 0, &ver) || ver != 1 || get_fixed(hdr, &o, 1, 0, &fpe) ||
	    get_fixed(hdr, &o, 1, 0, &cnte) || get_fixed(hdr, &o, 1, 0, &tabe) ||
	    get_enc(hdr, &o, fpe, hdr->addr, &fptr))
		return 1;
	if (!frame->p) {
		const struct elf_load_seg *s = seg_of(img, fptr, 1, 1);

		if (!s || !in_range(s->offset, s->filesz, r->size))
			return 1;
		frame->p = r->map + s->offset + (fptr - s->vaddr);
		frame->size = s->filesz - (fptr - s->vaddr);
		frame->addr = fptr;
		frame->arch = hdr->arch;
	}
	if (cnte == PE_OMIT || tabe == PE_OMIT || get_enc(hdr, &o, cnte, hdr->addr, &count))
		return 1;
	for (uint64_t i = 0; i < count; i++) {
		if (get_enc(hdr, &o, tabe, hdr->addr, &loc) ||
		    get_enc(hdr, &o, tabe, hdr->addr, &fde)) {
			img->estats->nfdes_bad++; /* count runs past the table */
			break;
		}
		if (fde < frame->addr || fde - frame->addr >= frame->size) {
			img->estats->nfdes_bad++;
			continue;
		}
		if (fde_add(img, c, frame, fde - frame->addr, loc, 1))
			return -ENOMEM;
	}
	return 0;
}

/* .eh_frame_hdr and .eh_frame by section, else through PT_GNU_EH_FRAME. */
static int entry_fdes(struct elf_image *img, struct cands *c, const struct reader *r,
		      const struct elf_arch *arch)
{
	struct ehview hdr = {0}, frame = {0};
	const Elf64_Ehdr *eh = r->eh;
	int ret;

	for (size_t i = 1; i < r->shnum; i++) {
		const Elf64_Shdr *s = &r->sh[i];
		const char *name = sec_name(r, i);
		struct ehview *v = !strcmp(name, ".eh_frame")	    ? &frame
				   : !strcmp(name, ".eh_frame_hdr") ? &hdr
								    : NULL;

		if (v && s->sh_type != SHT_NOBITS && (s->sh_flags & SHF_ALLOC) && !v->p) {
			*v = (struct ehview){r->map + s->sh_offset, s->sh_size, s->sh_addr, arch};
		}
	}
	if (!hdr.p && eh->e_phentsize == sizeof(Elf64_Phdr) && eh->e_phnum != PN_XNUM &&
	    in_range(eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr), r->size)) {
		for (size_t i = 0; i < eh->e_phnum; i++) {
			Elf64_Phdr p;

			memcpy(&p, r->map + eh->e_phoff + i * sizeof(p), sizeof(p));
			if (p.p_type == PT_GNU_EH_FRAME &&
			    in_range(p.p_offset, p.p_filesz, r->size))
				hdr = (struct ehview){r->map + p.p_offset, p.p_filesz, p.p_vaddr,
						      arch};
		}
	}
	if (hdr.p) {
		ret = use_eh_frame_hdr(img, r, c, &hdr, &frame);
		if (ret <= 0)
			return ret;
	}
	return frame.p ? walk_eh_frame(img, c, &frame) : 0;
}

/* Leading underscores, for choosing among aliases: malloc over __libc_malloc. */
static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* By address; then the source by precedence (FDEs last); then the name to
 * show: not empty, global, fewest leading underscores, shortest, alphabetical. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	size_t ux, uy, lx, ly;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->src != y->src)
		return x->src - y->src;
	if (!x->name || !y->name)
		return !!y->name - !!x->name;
	if (!*x->name != !*y->name)
		return !*x->name - !*y->name; /* an empty name last */
	if ((x->flags ^ y->flags) & ENTRY_GLOBAL)
		return (y->flags & ENTRY_GLOBAL) ? 1 : -1;
	ux = underscores(x->name);
	uy = underscores(y->name);
	if (ux != uy)
		return ux < uy ? -1 : 1;
	lx = sym_name_len(x->name); /* fopen, not fopen64, for fopen@@GLIBC_2.2.5 */
	ly = sym_name_len(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Is ADDR in a PLT section (stubs, not functions)? */
static int in_plt(const struct reader *r, uint64_t addr)
{
	for (size_t i = 1; i < r->shnum; i++) {
		const char *name = sec_name(r, i);

		if ((!strncmp(name, ".plt", 4) || !strcmp(name, ".iplt")) &&
		    addr - r->sh[i].sh_addr < r->sh[i].sh_size)
			return 1;
	}
	return 0;
}

static int entry_cmp_addr(const void *key, const void *elem)
{
	uint64_t a = *(const uint64_t *)key, b = ((const struct elf_entry *)elem)->addr;

	return a < b ? -1 : a > b;
}

/* The compiler site of each entry: at most SITE_WINDOW bytes in (the CET
 * branch target marker and a site marker come first), or up to PREFIX_PAD_MAX before it (a prefix
 * pad with no symbol to move the site to). */
static void match_sites(struct elf_image *img)
{
	size_t k = 0;

	for (size_t i = 0; i < img->nsites; i++) {
		uint64_t a = img->sites[i].addr;
		struct elf_entry *e;

		while (k < img->nentries && img->entries[k].addr <= a)
			k++;
		if (k > 0) {
			e = &img->entries[k - 1];
			uint64_t win = e->size && e->size < SITE_WINDOW ? e->size : SITE_WINDOW;

			if (a - e->addr < win) {
				if (e->site < 0)
					e->site = (int32_t)i;
				continue;
			}
		}
		if (k < img->nentries && img->entries[k].addr - a <= PREFIX_PAD_MAX &&
		    img->entries[k].site < 0)
			img->entries[k].site = (int32_t)i;
	}
}

/* Merge the candidates into img->entries (see elf.h and docs/ELF-SITES.md). */
static int make_entries(struct elf_image *img, struct cands *c, const struct reader *r)
{
	const char *obj = strrchr(img->path, '/') ? strrchr(img->path, '/') + 1 : img->path;
	size_t cap = img->names_len, n = 0;
	uint64_t sym_end = 0; /* end of the furthest-reaching symbol so far */

	if (c->n)
		qsort(c->v, c->n, sizeof(*c->v), cand_cmp);
	img->entries = calloc(c->n ? c->n : 1, sizeof(*img->entries));
	if (!img->entries)
		return -ENOMEM;
	for (size_t i = 0, j; i < c->n; i = j) {
		const struct cand *first = &c->v[i];
		struct elf_entry *e = &img->entries[n];
		const struct elf_load_seg *s;
		uint64_t fde_size = 0;
		char sub[64 + 256];
		int err;

		*e = (struct elf_entry){.addr = first->addr, .src = first->src, .site = -1};
		e->flags = first->flags & ENTRY_GLOBAL;
		for (j = i; j < c->n && c->v[j].addr == first->addr; j++) {
			if (c->v[j].name) {
				e->flags |= c->v[j].flags & ENTRY_IFUNC;
				if (!e->size)
					e->size = c->v[j].size;
			} else {
				e->flags |= c->v[j].flags & (ENTRY_HAS_FDE | ENTRY_MIDFRAME);
				if (!fde_size)
					fde_size = c->v[j].size;
			}
		}
		if (!e->size)
			e->size = fde_size;
		/* An FDE inside a symbol: part of that function, not an entry. */
		if (!first->name && e->addr < sym_end)
			continue;
		if (first->name && (e->addr >= sym_end || e->size > sym_end - e->addr))
			sym_end = e->size > UINT64_MAX - e->addr ? UINT64_MAX : e->addr + e->size;
		if (in_plt(r, e->addr))
			continue;
		s = seg_of(img, e->addr, e->size ? e->size : 1, 0);
		if (!s || !(s->flags & PF_X)) {
			img->estats->nbad++;
			continue;
		}
		if (!first->name || !*first->name)
			snprintf(sub, sizeof(sub), "sub_%llx@%.255s", (unsigned long long)e->addr,
				 obj);
		err = first->name && *first->name ? add_sym_name(img, &cap, first->name, &e->name)
						  : add_name(img, &cap, sub, &e->name);
		if (err)
			return err;
		img->estats->by_src[e->src]++;
		n++;
	}
	img->nentries = n;
	match_sites(img);
	return 0;
}

int elf_entries_mostly_unwound(const struct elf_image *img)
{
	size_t n = 0;
	for (size_t i = 0; i < img->nentries; i++)
		n += (img->entries[i].flags & ENTRY_HAS_FDE) != 0;
	return n * 3 >= img->nentries * 2;
}

int elf_load_funcs(struct elf_image *img)
{
	struct reader r = {0};
	const struct elf_arch *arch;
	int fd = -1, err;

	if (!img->funcs_deferred)
		return 0;
	img->funcs_deferred = 0; /* one attempt */
	r.path = img->path;
	r.bias = img->bias;
	r.mem = img->mem;
	err = map_file(img->path, &r, &fd);
	if (err)
		return err;
	err = check_ehdr(img, &r, &arch);
	if (!err)
		err = load_shdrs(img, &r);
	if (!err)
		err = load_funcs(img, &r);
	unmap_file(&r, fd);
	if (err) {
		free(img->funcs);
		img->funcs = NULL;
		img->nfuncs = 0;
	}
	return err;
}

int elf_load_entries(struct elf_image *img)
{
	struct reader r = {0}, d = {0};
	struct cands c = {0};
	const struct elf_arch *arch;
	int fd = -1, dfd = -1, err;

	if (img->entries)
		return 0;
	img->err[0] = 0;
	free(img->estats);
	img->estats = calloc(1, sizeof(*img->estats));
	if (!img->estats) {
		set_err(img, "%s: out of memory", img->path);
		return -ENOMEM;
	}
	r.path = img->path;
	r.bias = img->bias;
	r.mem = img->mem;
	err = map_file(img->path, &r, &fd);
	if (err) {
		set_err(img, "%s: %s", img->path, strerror(-err));
		return err;
	}
	/* The file may have changed since elf_load: check it all again. */
	err = check_ehdr(img, &r, &arch);
	if (!err)
		err = load_shdrs(img, &r);
	if (!err)
		err = entry_symbols(img, &c, &r, &d, &dfd);
	if (!err)
		err = entry_fdes(img, &c, &r, arch);
	if (!err)
		err = make_entries(img, &c, &r);
	free(c.v);
	unmap_file(&d, dfd);
	unmap_file(&r, fd);
	if (err) {
		free(img->entries);
		img->entries = NULL;
		img->nentries = 0;
		if (err == -ENOMEM)
			set_err(img, "%s: out of memory", img->path);
		return err;
	}
	if (img->estats->nfdes_bad)
		set_err(img,
			"%s: %zu records of .eh_frame could not be read (damaged, or an encoding "
			"not decoded here); functions known only from them are missing",
			img->path, img->estats->nfdes_bad);
	return 0;
}

const char *elf_entry_name(const struct elf_image *img, const struct elf_entry *e)
{
	return e->name < img->names_len ? img->names + e->name : "?";
}

ptrdiff_t elf_entry_find(const struct elf_image *img, uint64_t addr)
{
	const struct elf_entry *e;

	if (!img->nentries)
		return -1;
	e = bsearch(&addr, img->entries, img->nentries, sizeof(*e), entry_cmp_addr);
	return e ? e - img->entries : -1;
}

const char *elf_entry_src_name(unsigned src)
{
	switch (src) {
	case ENTRY_SYMTAB:
		return "symtab";
	case ENTRY_DYNSYM:
		return "dynsym";
	case ENTRY_FDE:
		return "fde";
	}
	return "?";
}

int elf_read_code(const struct elf_image *img, uint64_t addr, void *buf, size_t len)
{
	const struct elf_load_seg *s = seg_of(img, addr, len, !img->mem);
	ssize_t got;
	int fd, err;

	if (!s)
		return -EFAULT;
	if (img->mem) {
		memcpy(buf, (const void *)(uintptr_t)(addr + img->bias), len);
		return 0;
	}
	fd = open(img->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = pread(fd, buf, len, s->offset + (addr - s->vaddr));
	err = got < 0 ? -errno : got == (ssize_t)len ? 0 : -EIO;
	close(fd);
	return err;
}
