/* SPDX-License-Identifier: MIT */
/*
 * x86dec-diff.c - x86dec.c against capstone, instruction by instruction,
 * over the executable sections of the ELF files named: at every offset where
 * capstone (with operand details) decodes an instruction, the lengths must
 * agree, and so must the place of a RIP-relative displacement. Capstone's
 * step decides where the next comparison is, so one disagreement does not
 * cascade. Where capstone finds no instruction, x86dec's answer is counted
 * (and shown, up to a few) but is not a failure: capstone 4 lacks newer
 * extensions, and both sweeps step over what they cannot decode. Where
 * capstone is known wrong (capstone_wrong), x86dec's length is taken.
 *
 * `x86dec-diff random N`: N random byte strings of 1-15 bytes, each in a
 * buffer of exactly its size (AddressSanitizer sees a read past it): the
 * length, displacement and immediate decoded never exceed the bytes given.
 *
 * Usage: x86dec-diff FILE... (TAP, one test per file). Links capstone.
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "x86dec.h"
#include "../unit/tap.h"

static csh h;
static cs_insn *ci;

/* Where capstone 4 is known wrong, and x86dec follows the manuals (and
 * objdump): ud0 and ud1 take a ModRM; an EVEX register form with embedded
 * rounding (b set, mod 3) is one byte shorter than capstone says. */
static const char *capstone_wrong(const struct x86_dec *in, int cl)
{
	if (in->enc == X86_LEGACY && in->map == 1 && (in->op == 0xb9 || in->op == 0xff) &&
	    in->has_modrm && cl < in->len)
		return "ud0/ud1 with their ModRM";
	if (in->enc == X86_EVEX && in->has_modrm && (in->modrm >> 6) == 3 && cl == in->len + 1)
		return "EVEX rounding control";
	return NULL;
}

static void hex(char *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 3 * i, "%02x ", p[i]);
}

/* Compare over CODE (LEN bytes at ADDR). Returns the number of
 * disagreements; counts instructions and capstone's gaps. */
static long sweep(const char *file, const uint8_t *code, size_t len, uint64_t addr, long *ninsn,
		  long *gaps, long *gap_decoded, long *known)
{
	long bad = 0;
	char hb[64];
	for (size_t o = 0; o < len;) {
		const uint8_t *p = code + o;
		size_t n = len - o < 15 ? len - o : 15;
		uint64_t a = addr + o;
		struct x86_dec in;
		int l = x86_decode(code + o, len - o, &in);
		if (!cs_disasm_iter(h, &p, &n, &a, ci)) {
			(*gaps)++;
			if (l) {
				if (*gap_decoded < 5) {
					hex(hb, code + o, (size_t)l);
					diag("%s %#lx: capstone: none, x86dec: %d (%s)", file,
					     (unsigned long)(addr + o), l, hb);
				}
				(*gap_decoded)++;
			}
			o++;
			continue;
		}
		(*ninsn)++;
		int cl = (int)ci->size, cdisp = 0;
		const cs_x86 *x = &ci->detail->x86;
		for (int i = 0; i < x->op_count; i++)
			if (x->operands[i].type == X86_OP_MEM &&
			    (x->operands[i].mem.base == X86_REG_RIP ||
			     x->operands[i].mem.base == X86_REG_EIP))
				cdisp = 1;
		if (l && l != cl && capstone_wrong(&in, cl)) {
			if ((*known)++ < 3) {
				hex(hb, code + o, (size_t)(cl > l ? cl : l));
				diag("%s %#lx: capstone %d, x86dec %d (%s): %s", file,
				     (unsigned long)(addr + o), cl, l, hb, capstone_wrong(&in, cl));
			}
			o += (size_t)l;
			continue;
		}
		if (l != cl || cdisp != (in.disp_off != 0)) {
			if (bad < 20) {
				hex(hb, code + o, (size_t)(cl > l ? cl : l));
				diag("%s %#lx: %s %s: capstone %d%s, x86dec %d%s (%s)", file,
				     (unsigned long)(addr + o), ci->mnemonic, ci->op_str, cl,
				     cdisp ? " rip" : "", l, in.disp_off ? " rip" : "", hb);
			}
			bad++;
		}
		o += (size_t)cl;
	}
	return bad;
}

static void one(const char *file)
{
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		ok(0, "%s: cannot open", file);
		return;
	}
	const uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED || st.st_size < (off_t)sizeof(Elf64_Ehdr) ||
	    memcmp(m, ELFMAG, SELFMAG)) {
		ok(0, "%s: not an ELF file", file);
		return;
	}
	const Elf64_Ehdr *eh = (const void *)m;
	const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
	long bad = 0, ninsn = 0, gaps = 0, gapdec = 0, known = 0;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_PROGBITS || !(sh[i].sh_flags & SHF_EXECINSTR) ||
		    sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size)
			continue;
		bad += sweep(file, m + sh[i].sh_offset, sh[i].sh_size, sh[i].sh_addr, &ninsn, &gaps,
			     &gapdec, &known);
	}
	munmap((void *)m, (size_t)st.st_size);
	diag("%s: %ld instructions, %ld bytes capstone does not decode (%ld of them "
	     "x86dec does), %ld where capstone is known wrong",
	     file, ninsn, gaps, gapdec, known);
	ok(bad == 0 && ninsn > 0, "%s: x86dec agrees with capstone on %ld instructions", file,
	   ninsn);
}

/* Random bytes, biased to prefixes and escapes so the deep paths run. */
static void random_bytes(long n)
{
	static const uint8_t hot[] = {0x66, 0x67, 0xf2, 0xf3, 0xf0, 0x48, 0x41, 0x0f, 0x38, 0x3a,
				      0xc4, 0xc5, 0x62, 0x8f, 0x05, 0x04, 0x25, 0x44, 0xf6, 0xf7};
	unsigned long seed = 1;
	long overrun = 0, decoded = 0;
	for (long k = 0; k < n; k++) {
		size_t len = 1 + (size_t)(k % 15);
		uint8_t *b = malloc(len);
		for (size_t i = 0; i < len; i++) {
			seed = seed * 6364136223846793005ul + 1442695040888963407ul;
			unsigned r = (unsigned)(seed >> 33);
			b[i] = (r & 3) ? (uint8_t)(r >> 8) : hot[(r >> 8) % sizeof(hot)];
		}
		struct x86_dec in;
		int l = x86_decode(b, len, &in);
		if (l > (int)len ||
		    (l && ((in.disp_off && in.disp_off + 4 > l) || in.imm_off + in.imm_len > l)))
			overrun++;
		decoded += l > 0;
		free(b);
	}
	diag("%ld random strings, %ld decoded", n, decoded);
	ok(overrun == 0 && decoded > 0,
	   "random bytes: no length or field past the bytes given (%ld past)", overrun);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "random")) {
		random_bytes(atol(argv[2]));
		return tap_done();
	}
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK ||
	    cs_option(h, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK || !(ci = cs_malloc(h))) {
		ok(0, "capstone");
		return tap_done();
	}
	for (int i = 1; i < argc; i++)
		one(argv[i]);
	return tap_done();
}
