# dynftrace top-level build. Plain GNU make, no other build dependency.
#   make                 build/libdynftrace.so build/dynftrace (+ examples, tests)
#   make SAN=asan        the same with ASan+UBSan into build-asan/
#   make SAN=tsan        with TSan into build-tsan/
#   make check           build and run all tests (all configurations)
#   make bench           run the benchmarks (prints figures; never fails a test)
#   make format          clang-format every C source
#   make install         the command, runtime, headers, man pages, pkg-config
#                        file and bash completion under DESTDIR/PREFIX
#                        (PREFIX=/usr/local; BINDIR, LIBDIR, INCLUDEDIR,
#                        MANDIR, PKGCONFIGDIR, BASHCOMPDIR override parts)
#   make uninstall       removes what install put there
#   make ARCH=aarch64    cross-build into build-aarch64/ (gcc-aarch64-linux-gnu);
#                        `make check ARCH=aarch64` runs the tests under qemu-user,
#                        and those it cannot run on an emulated aarch64 kernel
#                        (qemu-system-aarch64: tests/cross/system.sh)
#   make ARCH=riscv64    the same for riscv64 into build-riscv64/
#                        (gcc-riscv64-linux-gnu, qemu-riscv64; its emulated
#                        kernel, qemu-system-riscv64, is built once from
#                        Debian's linux-source-6.1)

ARCH    ?= x86_64
ifeq ($(ARCH),x86_64)
CC      ?= gcc
NM      := nm
ARCH_SUFFIX :=
# Programs that are traced: built with entry sites.
TRACE_FLAGS := -fpatchable-function-entry=5
else ifeq ($(ARCH),aarch64)
CROSS   ?= aarch64-linux-gnu-
CC      := $(CROSS)gcc
NM      := $(CROSS)nm
ARCH_SUFFIX := -aarch64
# Two NOPs: the first becomes `mov x9, x30` once, the second the patched BL.
TRACE_FLAGS := -fpatchable-function-entry=2
else ifeq ($(ARCH),riscv64)
CROSS   ?= riscv64-linux-gnu-
CC      := $(CROSS)gcc
NM      := $(CROSS)nm
ARCH_SUFFIX := -riscv64
# Four c.nop (8 bytes): the first word becomes `auipc t0` once, the second
# the patched jalr/jal; entries 4-byte aligned so that it is one aligned word.
TRACE_FLAGS := -fpatchable-function-entry=4 -falign-functions=4
else
$(error ARCH must be x86_64, aarch64 or riscv64)
endif
SAN     ?=
ifeq ($(SAN),)
B       := build$(ARCH_SUFFIX)
SANFLAGS :=
else ifeq ($(SAN),asan)
B       := build-asan
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else ifeq ($(SAN),tsan)
B       := build-tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
else
$(error SAN must be empty, asan or tsan)
endif
ifneq ($(origin B_OVERRIDE),undefined)
B       := $(B_OVERRIDE)
endif

OPT     ?= -O2 -g

# The runtime's version (the public header's) and soname: major version 0,
# no stable ABI yet (a traced program may need rebuilding with each release).
VERSION := $(shell sed -n 's/^\#define DYNFTRACE_VERSION "\(.*\)"/\1/p' include/dynftrace/dynftrace.h)
SONAME  := libdynftrace.so.0

# Where `make install` puts things. An installed dynftrace finds its runtime
# at LIBDIR seen from BINDIR (a relative path, so that DESTDIR trees and
# moved trees work): the CLI is built with it ($(B)/gen/install_paths.h).
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(PREFIX)/share/bash-completion/completions
# The runtime's private directory: the name attach loads it under.
RUNTIMEDIR   := $(LIBDIR)/dynftrace
LIBDIR_REL   := $(shell realpath -m --relative-to='$(BINDIR)' '$(LIBDIR)')
WARN    := -Wall -Wextra
# The runtime's layers, each a folder that only looks down: core (ELF
# records, sites, patching, ops, RCU, signals and loader hooks), ring (the
# per-thread buffers, clock, CTF), trace (the tracers), ctl (the control
# socket); lib/ itself holds start-up and attach, which tie them together.
LIB_DIRS := lib lib/core lib/ring lib/trace lib/ctl
CFLAGS_COMMON := -std=gnu11 $(OPT) $(WARN) $(SANFLAGS) -Iinclude \
	$(addprefix -iquote ,$(LIB_DIRS)) -iquote lib/arch/$(ARCH) -MMD -MP
# The runtime: PIC, hidden by default, no instrumentation of itself.
LIB_CFLAGS := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -ftls-model=initial-exec \
	-fno-strict-aliasing -D_GNU_SOURCE
LIB_LDFLAGS := -shared -Wl,--version-script=lib/libdynftrace.map -Wl,-z,defs \
	-Wl,-z,now -Wl,--as-needed -Wl,-soname,$(SONAME) $(SANFLAGS) $(LDFLAGS)
# CPPFLAGS and CFLAGS (a distribution's hardening: _FORTIFY_SOURCE, stack
# protector) apply to the command only. The runtime chooses its own code
# generation: it runs inside trap handlers and callbacks where a checked
# libc call or a canary read is not allowed (graph_fast.c, interpose.c).
CLI_CFLAGS := $(CFLAGS_COMMON) -D_GNU_SOURCE -iquote $(B)/gen $(CPPFLAGS) $(CFLAGS)
# Every architecture's compiled-site reader (elf.c's table), the rest of
# the backend for ARCH only.
LIB_SRCS := $(wildcard $(addsuffix /*.c,$(LIB_DIRS))) $(wildcard lib/arch/$(ARCH)/*.c) \
	$(filter-out lib/arch/$(ARCH)/elf_site.c,$(wildcard lib/arch/*/elf_site.c))
LIB_ASM  := $(wildcard lib/arch/$(ARCH)/*.S)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS)) $(patsubst %.S,$(B)/obj/%.o,$(LIB_ASM))

# The CLI shares the ELF reader and a few pure helpers with the runtime.
CLI_SHARED := lib/core/elf.c lib/core/glob.c lib/core/pattern.c lib/core/demangle.c lib/ring/ring_salvage.c lib/trace/argspec.c $(wildcard lib/arch/*/elf_site.c) \
	lib/arch/$(ARCH)/inject.c lib/arch/$(ARCH)/reloc.c $(wildcard lib/arch/$(ARCH)/x86dec.c)
CLI_SRCS := $(wildcard cli/*.c)
# DWARF for argument specs (cli/dwarf_args.c): libdw when a program using
# it compiles and links with this compiler (Debian's libdw-dev; none for the
# aarch64 cross build), else the command says it was built without it.
# LIBDW=0 forces it off, LIBDW=1 on. The runtime never links it.
LIBDW ?= $(shell echo 'int main(void) { return dwarf_begin(0, 0) != 0; }' | \
	$(CC) -include elfutils/libdw.h -x c - -o /dev/null -ldw -lelf >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(LIBDW),1)
CLI_CFLAGS += -DHAVE_LIBDW
CLI_LIBS := -ldw -lelf
else
CLI_LIBS :=
endif
CLI_OBJS := $(patsubst %.c,$(B)/cliobj/%.o,$(CLI_SRCS) $(CLI_SHARED))

EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
TESTS_C  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/*.c))

.PHONY: all lib cli man examples tests check bench format clean install uninstall FORCE
# The man pages come from the command's --help: built where it runs (not
# for a cross build).
ifeq ($(ARCH),x86_64)
all: lib cli man examples tests
else
all: lib cli examples tests
endif

lib: $(B)/libdynftrace.so
cli: $(B)/dynftrace
man: $(B)/man/.stamp $(B)/dynftrace.pc
examples: $(EXAMPLES)
tests: $(TESTS_C)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@
$(B)/obj/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

# The libc wrappers run before a sanitizer runtime has initialised (TSan's
# own start-up calls sigaction): never instrument them, nor got.o, whose
# dft_real they call then.
$(B)/obj/lib/core/interpose.o $(B)/obj/lib/core/got.o: LIB_CFLAGS += -fno-sanitize=all
# Under TSan, code that reads or writes program text has no shadow memory
# to check against: leave the engine and the site scanner uninstrumented
# (ops.c and rcu.c, where the lock-free logic lives, stay instrumented).
# The ring's readers copy pages that writers may reuse meanwhile and check
# afterwards (ring_read.c, a seqlock's reader): TSan cannot model that.
ifeq ($(SAN),tsan)
$(B)/obj/lib/core/patch.o $(B)/obj/lib/core/sites.o $(B)/obj/lib/arch/$(ARCH)/arch.o \
	$(B)/obj/lib/ring/ring_read.o: LIB_CFLAGS += -fno-sanitize=all
endif

# The graph shortcut's C entry runs with only the general registers saved
# (graph_fast.c): no vector registers, no sanitizer calls, and no call out
# at all, which the link checks: its only undefined symbols may be data.
# riscv64 has no -mgeneral-regs-only, and no graph shortcut (its entry is
# never called there).
ifeq ($(ARCH),riscv64)
$(B)/obj/lib/trace/graph_fast.o: LIB_CFLAGS += -fno-sanitize=all -fno-stack-protector
else
$(B)/obj/lib/trace/graph_fast.o: LIB_CFLAGS += -mgeneral-regs-only -fno-sanitize=all -fno-stack-protector
endif
GRAPH_FAST_DATA := clk_mode clk_p clk_seq dft_self fg_self graph_route_ops ring_tls \
	ring_waiting ring_wake_seq trace_cfg trace_ring_on trace_roots rcu_gp_ctr \
	_GLOBAL_OFFSET_TABLE_
ifeq ($(ARCH),aarch64)
# gcc's outline atomics would be calls (libgcc's __aarch64_* helpers):
# inline LL/SC sequences instead, here only.
$(B)/obj/lib/trace/graph_fast.o: LIB_CFLAGS += -mno-outline-atomics
endif

$(B)/libdynftrace.so: $(LIB_OBJS) lib/libdynftrace.map
	@bad=$$($(NM) -u $(B)/obj/lib/trace/graph_fast.o | awk '{ print $$2 }' | \
		grep -vxF -e "$$(echo $(GRAPH_FAST_DATA) | tr ' ' '\n')"); \
	if [ -n "$$bad" ]; then echo "graph_fast.o calls out: $$bad" >&2; exit 1; fi
	$(CC) $(LIB_LDFLAGS) -o $@ $(LIB_OBJS)
	@# attach loads it under this name (include/dynftrace/attach.h); programs
	@# linked with it name it by its soname
	ln -sf libdynftrace.so $(B)/libdynftrace-attach.so
	ln -sf libdynftrace.so $(B)/$(SONAME)

$(B)/cliobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CLI_CFLAGS) -c $< -o $@

# Rewritten only when a value changes, so that only util.c recompiles then.
$(B)/gen/install_paths.h: FORCE
	@mkdir -p $(dir $@)
	@case '$(BINDIR)$(LIBDIR)' in /*) ;; *) echo "BINDIR and LIBDIR must be absolute" >&2; exit 1 ;; esac
	@printf '/* Generated by make: where an installed dynftrace finds its runtime. */\n#define DFT_LIBDIR_REL "%s"\n#define DFT_RUNTIME_SONAME "%s"\n#define DFT_RUNTIME_PRIVDIR "dynftrace"\n' \
		'$(LIBDIR_REL)' '$(SONAME)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(B)/cliobj/cli/util.o: $(B)/gen/install_paths.h

$(B)/dynftrace: $(CLI_OBJS)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJS) $(CLI_LIBS)

# Man pages, made from the command's own --help (scripts/manpages.sh): a
# command or option added there is in its page at the next build.
$(B)/man/.stamp: $(B)/dynftrace scripts/manpages.sh scripts/help2man.awk
	@rm -rf $(B)/man
	scripts/manpages.sh $(B)/dynftrace $(B)/man '$(LIBDIR)' '$(SONAME)'
	@touch $@

# pkg-config's paths below the prefix are written from ${prefix} (so that
# --define-variable=prefix=... moves them all).
pc_rel = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
$(B)/dynftrace.pc: Makefile FORCE
	@printf '%s\n' 'prefix=$(PREFIX)' 'includedir=$(call pc_rel,$(INCLUDEDIR))' \
		'libdir=$(call pc_rel,$(LIBDIR))' \
		'# what `dynftrace cflags` prints: an entry site in every function' \
		'trace_cflags=-fpatchable-function-entry=5' '' \
		'Name: dynftrace' \
		'Description: dynamic function tracing runtime for user-space programs' \
		'Version: $(VERSION)' \
		'Cflags: -I$${includedir} $${trace_cflags}' \
		'Libs: -L$${libdir} -ldynftrace' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

HEADERS := $(shell find include/dynftrace -name '*.h' | sort)

install: lib cli man
	install -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(RUNTIMEDIR)' \
		'$(DESTDIR)$(PKGCONFIGDIR)' '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(BASHCOMPDIR)'
	install -m 755 $(B)/dynftrace '$(DESTDIR)$(BINDIR)/dynftrace'
	install -m 644 $(B)/libdynftrace.so '$(DESTDIR)$(LIBDIR)/libdynftrace.so.$(VERSION)'
	ln -sf libdynftrace.so.$(VERSION) '$(DESTDIR)$(LIBDIR)/$(SONAME)'
	ln -sf $(SONAME) '$(DESTDIR)$(LIBDIR)/libdynftrace.so'
	ln -sf ../$(SONAME) '$(DESTDIR)$(RUNTIMEDIR)/libdynftrace-attach.so'
	for h in $(HEADERS); do \
		install -D -m 644 "$$h" "$(DESTDIR)$(INCLUDEDIR)/$${h#include/}" || exit 1; \
	done
	install -m 644 $(B)/dynftrace.pc '$(DESTDIR)$(PKGCONFIGDIR)/dynftrace.pc'
	install -m 644 $(B)/man/*.1 '$(DESTDIR)$(MANDIR)/man1/'
	install -m 644 scripts/dynftrace.bash '$(DESTDIR)$(BASHCOMPDIR)/dynftrace'

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/dynftrace' '$(DESTDIR)$(LIBDIR)/libdynftrace.so.$(VERSION)' \
		'$(DESTDIR)$(LIBDIR)/$(SONAME)' '$(DESTDIR)$(LIBDIR)/libdynftrace.so' \
		'$(DESTDIR)$(RUNTIMEDIR)/libdynftrace-attach.so' \
		'$(DESTDIR)$(PKGCONFIGDIR)/dynftrace.pc' '$(DESTDIR)$(BASHCOMPDIR)/dynftrace' \
		'$(DESTDIR)$(MANDIR)/man1/dynftrace.1' '$(DESTDIR)$(MANDIR)/man1/'dynftrace-*.1
	rm -rf '$(DESTDIR)$(INCLUDEDIR)/dynftrace'
	-rmdir '$(DESTDIR)$(RUNTIMEDIR)' 2>/dev/null

# Examples and unit tests are traced programs linked with the runtime.
$(B)/examples/%: examples/%.c $(B)/libdynftrace.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -D_GNU_SOURCE $(TRACE_FLAGS) $< -o $@ -L$(B) -ldynftrace \
		-Wl,-rpath,'$$ORIGIN/..' -lpthread

$(B)/tests/%: tests/unit/%.c tests/unit/tap.h $(B)/libdynftrace.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -D_GNU_SOURCE $(TRACE_FLAGS) $< -o $@ -L$(B) -ldynftrace \
		-Wl,-rpath,'$$ORIGIN/..' -lpthread -ldl

check:
	ARCH=$(ARCH) ./tests/run.sh

bench: all
	./bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-tsan build-aarch64 build-riscv64

-include $(shell find $(B) -name '*.d' 2>/dev/null)
