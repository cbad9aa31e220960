/* SPDX-License-Identifier: MIT */
/*
 * elf.h - reading call-site records, symbols and function entries from ELF
 * objects.
 *
 * Shared by the runtime (objects loaded in this process: records and code
 * bytes are read from memory, already relocated) and the command line (files
 * on disk: records are read from the file with their relocations applied).
 * libc only; never trusts the file: every offset and size is checked, and a
 * damaged file gives -EINVAL with a message in img->err, never a crash.
 *
 * Site rules, from a record value R (a link-time address):
 *  - __patchable_function_entries (-fpatchable-function-entry=N[,M]): R is
 *    the first NOP. When M > 0, R lies before the function symbol; the site
 *    is then the symbol's address.
 *  - __mcount_loc (-pg -mfentry -mrecord-mcount [-mnop-mcount]): R is the
 *    compiler's call of __fentry__ or its NOP.
 * What each architecture's compilers put there: lib/arch/<arch>/elf_site.c.
 */
#ifndef DYNFTRACE_ELF_H
#define DYNFTRACE_ELF_H

#include <stddef.h>
#include <stdint.h>

enum site_kind {
	SITE_PATCHABLE = 1, /* __patchable_function_entries */
	SITE_FENTRY = 2,    /* __mcount_loc, -mfentry */
};

struct elf_func {
	uint64_t addr; /* link-time address */
	uint64_t size;
	uint32_t name;	/* offset into elf_image.names */
	uint8_t global; /* STB_GLOBAL/STB_WEAK rather than STB_LOCAL */
};

struct elf_site {
	uint64_t addr;	 /* link-time address of the site's first byte */
	uint8_t len;	 /* bytes the site owns: 5, or 6 for a 6-byte fentry call */
	uint8_t kind;	 /* enum site_kind */
	uint8_t marker;	 /* length of the landing marker (arch.h) right before the
			    site, 0 if none */
	int32_t func;	 /* index into funcs; -1 when no symbol covers the site */
	uint64_t record; /* the record's value: where the compiler's NOPs begin
			    (before the function with -fpatchable-function-entry=N,M) */
};

/* Where an entry's name came from; the first source that knows an address
 * names it (docs/ELF-SITES.md, "Function entries"). */
enum elf_entry_src {
	ENTRY_SYMTAB = 1, /* .symtab, or the build-id debug file's */
	ENTRY_DYNSYM = 2, /* .dynsym (stripped object) */
	ENTRY_FDE = 3,	  /* only an .eh_frame FDE starts here: sub_<addr>@<object> */
};

/* elf_entry.flags */
#define ENTRY_IFUNC 0x01 /* an STT_GNU_IFUNC symbol: the code is its resolver */
#define ENTRY_MIDFRAME                                                                             \
	0x02		   /* its FDE starts with the frame already set up: entered by             \
			      a jump (a .cold part) or by nobody (_start), not by a call */
#define ENTRY_HAS_FDE 0x04 /* an FDE starts here */
#define ENTRY_GLOBAL  0x08 /* the name is STB_GLOBAL/STB_WEAK */

struct elf_entry {
	uint64_t addr; /* link-time address of the function's first byte */
	uint64_t size; /* bytes: the symbol's size, else the FDE's range; 0: unknown */
	uint32_t name; /* offset into elf_image.names */
	uint8_t src;   /* enum elf_entry_src */
	uint8_t flags; /* ENTRY_* */
	int32_t site;  /* index into sites of the compiler site at this entry, or -1 */
};

/* What elf_load_entries() read, for reports and tests. */
struct elf_entry_stats {
	size_t by_src[4]; /* entries by enum elf_entry_src */
	size_t nfdes;	  /* FDEs read from .eh_frame */
	size_t nfdes_bad; /* CIEs/FDEs refused: damaged, unknown augmentation or encoding */
	size_t nbad;	  /* symbols/FDEs outside every executable segment, or running
			     past one */
};

struct elf_load_seg {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

struct elf_image {
	char *path;
	int type;		   /* ET_EXEC or ET_DYN */
	int mem;		   /* elf_load's MEM */
	struct elf_load_seg *segs; /* PT_LOAD segments, in file order */
	size_t nsegs;
	struct elf_func *funcs; /* sorted by addr; aliases at one address: one entry,
				   global name preferred */
	size_t nfuncs;
	char *names; /* NUL-terminated names, indexed by elf_func.name */
	size_t names_len;
	int has_symtab;		/* 1: names from .symtab; 0: from .dynsym only (stripped) */
	int funcs_deferred;	/* funcs not read yet: elf_load_funcs reads them */
	struct elf_site *sites; /* sorted by addr, unique */
	size_t nsites;
	size_t nrecords;   /* record entries read from the sections */
	size_t nbad;	   /* records refused: outside any executable segment, ... */
	size_t nrecovered; /* sites found at function entries without a record */
	unsigned char build_id[64];
	size_t build_id_len;
	char err[256]; /* why elf_load failed, or a warning when it succeeded */
	/* Added for the CLI, which must know whether to ask the dynamic loader
	 * for the libraries (the loader crashes on static programs). */
	char *interp;	/* PT_INTERP path, NULL if none */
	size_t nneeded; /* DT_NEEDED entries in PT_DYNAMIC */
	uintptr_t bias; /* elf_load's BIAS (and MEM above), for elf_read_code */
	/* Function entries, filled by elf_load_entries() only; the runtime
	 * keeps an image per object, so this costs it two words and a pointer. */
	struct elf_entry *entries; /* sorted by addr, unique, in executable PT_LOADs */
	size_t nentries;
	struct elf_entry_stats *estats;
};

/*
 * Do two thirds or more of IMG's entries (elf_load_entries) start an FDE?
 * Where they do, one without unwind information is hand-written or
 * generated code (riscv64's gcc makes none for C by default).
 */
int elf_entries_mostly_unwound(const struct elf_image *img);

/*
 * The function symbols elf_load left for later (in a process, MEM set, an
 * object without sites): read them now. 0, or -errno (funcs stay empty).
 * Not thread-safe: the runtime calls it under patch_lock.
 */
int elf_load_funcs(struct elf_image *img);

/*
 * Read PATH. With MEM non-zero the object is mapped in this process at load
 * bias BIAS (runtime address = link-time address + BIAS): record values and
 * code bytes come from memory; otherwise from the file. Returns 0 (img filled;
 * img->err may hold a warning such as "stripped"), or -errno with img->err
 * naming the problem (-ENOENT, -EACCES, -EINVAL for a damaged or foreign file,
 * -ENOMEM). An object with no records is not an error: nsites == 0.
 */
int elf_load(struct elf_image *img, const char *path, uintptr_t bias, int mem);

/*
 * Every function entry of IMG (after a successful elf_load): symbols of type
 * STT_FUNC and STT_GNU_IFUNC from .symtab (or the debug file), else .dynsym,
 * and the start of every .eh_frame FDE no symbol covers (through the
 * .eh_frame_hdr table when there is one). Sections are read from the file
 * also in memory mode: .symtab and .eh_frame need not be mapped. Entries in
 * PLT sections and outside executable segments are left out. Returns 0
 * (img->err may hold a warning about a damaged .eh_frame), or -errno with
 * img->err set (the file changed or went away since elf_load, -ENOMEM).
 * Calling it again is a no-op.
 */
int elf_load_entries(struct elf_image *img);

/* Name of entry E. */
const char *elf_entry_name(const struct elf_image *img, const struct elf_entry *e);

/* Index of the entry starting exactly at link-time address ADDR, or -1. */
ptrdiff_t elf_entry_find(const struct elf_image *img, uint64_t addr);

/* "symtab", "dynsym" or "fde". */
const char *elf_entry_src_name(unsigned src);

/*
 * Copy LEN code bytes at link-time address ADDR into BUF: from this process in
 * memory mode, else from the file. The range must lie in one PT_LOAD (file
 * part, for files). Returns 0 or -errno (-EFAULT outside, -EIO short read).
 */
int elf_read_code(const struct elf_image *img, uint64_t addr, void *buf, size_t len);

/* Free everything elf_load allocated; img may then be reused. */
void elf_free(struct elf_image *img);

/* Name of function index FUNC, or NULL for -1. */
const char *elf_func_name(const struct elf_image *img, int32_t func);

/* Index of the function covering link-time address ADDR, or -1. */
int32_t elf_func_lookup(const struct elf_image *img, uint64_t addr);

/*
 * What an architecture knows of its compiled sites (lib/arch/<arch>/
 * elf_site.c): FIX_SITE moves SITE->addr (the record value or the function
 * start) to the site's first byte and sets its len and marker, reading code
 * bytes at link-time addresses with READ (0 or -1). It knows nothing of
 * the reader, which it calls only through READ and FUNC_START.
 */
typedef int (*elf_read_fn)(const struct elf_image *img, const void *ctx, uint64_t addr, void *buf,
			   size_t len);
/* Does a function (by its symbol) start at ADDR, or does no symbol cover it? */
typedef int (*elf_func_start_fn)(const struct elf_image *img, uint64_t addr);
struct elf_arch {
	uint16_t machine; /* EM_* */
	void (*fix_site)(const struct elf_image *img, struct elf_site *site, elf_read_fn read,
			 elf_func_start_fn func_start, const void *ctx);
	/* Is the compiler's site, of LIKE's kind (a recorded site of the same
	 * object), at the entry of the function starting at ADDR? Returns 1
	 * with OUT's addr, len and marker set, else 0. Finds the sites whose
	 * records the linker dropped (elf.c, recover_sites). */
	int (*entry_site)(const struct elf_image *img, uint64_t addr, const struct elf_site *like,
			  elf_read_fn read, const void *ctx, struct elf_site *out);
	/* The unwind rule at a function's entry, as a CIE states it: CFA =
	 * DWARF register CFA_REG + CFA_OFF, and the return address saved at
	 * CFA - 8 in column RA_SAVED, or -1 when it stays in a register (no
	 * rule). A CIE stating anything else makes its FDEs doubtful entries. */
	uint8_t cfa_reg, cfa_off;
	int8_t ra_saved;
	/* The dynamic relocations a PIE's records take: base-relative (the
	 * addend is the address) and absolute 64-bit (symbol + addend). */
	uint32_t rel_relative, rel_abs64;
};
extern const struct elf_arch elf_arch_x86_64;
extern const struct elf_arch elf_arch_aarch64;
extern const struct elf_arch elf_arch_riscv64;

#endif
