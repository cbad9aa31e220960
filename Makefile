# dynftrace top-level build. Plain GNU make, no other build dependency.
#   make                 build/libdynftrace.so build/dynftrace (+ examples, tests)
#   make SAN=asan        the same with ASan+UBSan into build-asan/
#   make SAN=tsan        with TSan into build-tsan/
#   make check           build and run all tests (all configurations)
#   make bench           run the benchmarks (prints figures; never fails a test)
#   make format          clang-format every C source

CC      ?= gcc
ARCH    := x86_64
SAN     ?=
ifeq ($(SAN),)
B       := build
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
	-Wl,-z,now -Wl,--as-needed $(SANFLAGS)
# Programs that are traced: built with entry sites.
TRACE_FLAGS := -fpatchable-function-entry=5

LIB_SRCS := $(wildcard $(addsuffix /*.c,$(LIB_DIRS))) $(wildcard lib/arch/$(ARCH)/*.c)
LIB_ASM  := $(wildcard lib/arch/$(ARCH)/*.S)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS)) $(patsubst %.S,$(B)/obj/%.o,$(LIB_ASM))

# The CLI shares the ELF reader and a few pure helpers with the runtime.
CLI_SHARED := lib/core/elf.c lib/core/pattern.c lib/core/demangle.c lib/ring/ring_salvage.c $(wildcard lib/arch/*/elf_site.c) \
	lib/arch/$(ARCH)/inject.c lib/arch/$(ARCH)/reloc.c
CLI_SRCS := $(wildcard cli/*.c)
CLI_OBJS := $(patsubst %.c,$(B)/cliobj/%.o,$(CLI_SRCS) $(CLI_SHARED))

EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
TESTS_C  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/*.c))

.PHONY: all lib cli examples tests check bench format clean
all: lib cli examples tests

lib: $(B)/libdynftrace.so
cli: $(B)/dynftrace
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
$(B)/obj/lib/trace/graph_fast.o: LIB_CFLAGS += -mgeneral-regs-only -fno-sanitize=all -fno-stack-protector
GRAPH_FAST_DATA := clk_mode clk_p clk_seq dft_self fg_self graph_route_ops ring_tls \
	ring_waiting ring_wake_seq trace_cfg trace_ring_on trace_roots rcu_gp_ctr \
	_GLOBAL_OFFSET_TABLE_

$(B)/libdynftrace.so: $(LIB_OBJS) lib/libdynftrace.map
	@bad=$$(nm -u $(B)/obj/lib/trace/graph_fast.o | awk '{ print $$2 }' | \
		grep -vxF -e "$$(echo $(GRAPH_FAST_DATA) | tr ' ' '\n')"); \
	if [ -n "$$bad" ]; then echo "graph_fast.o calls out: $$bad" >&2; exit 1; fi
	$(CC) $(LIB_LDFLAGS) -o $@ $(LIB_OBJS)
	@# attach loads it under this name (include/dynftrace/attach.h)
	ln -sf libdynftrace.so $(B)/libdynftrace-attach.so

$(B)/cliobj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -D_GNU_SOURCE -DDYNFTRACE_LIBDIR='""' -c $< -o $@

$(B)/dynftrace: $(CLI_OBJS)
	$(CC) $(SANFLAGS) -o $@ $(CLI_OBJS)

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
	./tests/run.sh

bench: all
	./bench/run.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-tsan

-include $(shell find $(B) -name '*.d' 2>/dev/null)
