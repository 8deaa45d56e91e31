# SPDX-License-Identifier: GPL-2.0-only
#
# lzchan top-level build.  (The kernel's own build reads ./Kbuild instead.)
#
#   make            libchan (shared + static), tools, and lzchan.ko for the
#                   installed kernel headers (KDIR=... overrides)
#   make modules    the module alone
#   make deps       install/cache everything the build and tests need (root)
#   make check      deps, build, host tests, VM tests on both kernels
#   make vm-check KERNEL=bookworm|trixie   one VM run
#   make run        the main job: two processes exchange messages
#   make install    DESTDIR=, PREFIX= (default /usr/local)

VERSION		:= 0.1.0
SONAME		:= liblzchan.so.0
CACHE		?= $(CURDIR)/.cache
KDIR		?= $(shell $(CURDIR)/scripts/kdir.sh)
PREFIX		?= /usr/local
LIBDIR		?= $(PREFIX)/lib
INCLUDEDIR	?= $(PREFIX)/include
BINDIR		?= $(PREFIX)/bin

CC		?= cc
AR		?= ar
CFLAGS		?= -O2 -g
# Our own code builds warning-free; the flags are not optional.
LZ_CFLAGS	:= -std=gnu11 -Wall -Wextra -Werror $(CFLAGS)
LZ_CPPFLAGS	:= -D_GNU_SOURCE -I$(CURDIR)/libchan -I$(CURDIR)/kmod/uapi $(CPPFLAGS)
export CC AR LZ_CFLAGS LZ_CPPFLAGS

LIB_SRCS	:= $(wildcard libchan/*.c)
LIB_HDRS	:= libchan/lzchan.h libchan/lzchan_internal.h kmod/uapi/linux/lzchan.h
LIB_A		:= libchan/liblzchan.a
LIB_SO		:= libchan/$(SONAME)
TOOLS		:= tools/lzchan tools/lzchan-demo tools/lzchan-bench
BENCH_SRCS	:= $(wildcard tools/bench/*.c)

.PHONY: all lib tools modules selftests deps check vm-check install clean run
all: lib tools modules

lib: $(LIB_A) $(LIB_SO) libchan/liblzchan.so libchan/lzchan.pc

libchan/%.o: libchan/%.c $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) -c -o $@ $<

libchan/%.os: libchan/%.c $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) -fPIC -c -o $@ $<

$(LIB_A): $(LIB_SRCS:.c=.o)
	rm -f $@ && $(AR) rcs $@ $^

$(LIB_SO): $(LIB_SRCS:.c=.os) libchan/liblzchan.map
	$(CC) $(LZ_CFLAGS) -shared -Wl,-soname,$(SONAME) \
		-Wl,--version-script=libchan/liblzchan.map -o $@ $(filter %.os,$^) $(LDFLAGS)

libchan/liblzchan.so: $(LIB_SO)
	ln -sf $(SONAME) $@

libchan/lzchan.pc: libchan/lzchan.pc.in Makefile
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' $< > $@

# Tools link the static library so they run from the build tree.
tools/%: tools/%.c $(LIB_A) $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS)

tools/lzchan-demo: tools/lzchan_demo.c $(LIB_A) $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) -o $@ $< $(LIB_A) $(LDFLAGS)

# The benchmark suite: libnuma for placement, PAPI for cache misses.
tools/lzchan-bench: $(BENCH_SRCS) tools/bench/lzb.h $(LIB_A) $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) -Itools/bench -o $@ $(BENCH_SRCS) $(LIB_A) \
		-lpapi -lnuma -lpthread -lm $(LDFLAGS)

tools: $(TOOLS)

# The main job: two unrelated processes exchange messages over a channel.
run: lib tools
	scripts/run.sh

modules:
	@test -n "$(KDIR)" -a -f "$(KDIR)/Makefile" || \
		{ echo "no kernel headers found: run 'make deps' or pass KDIR=/path/to/build" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

selftests: $(LIB_A) $(TOOLS)
	@test -f $(CACHE)/kselftest/kselftest_harness.h || \
		{ echo "kselftest headers missing: run 'make deps'" >&2; exit 1; }
	$(MAKE) -C selftests KSFT_DIR=$(CACHE)/kselftest LIB_A=$(CURDIR)/$(LIB_A)

deps:
	CACHE=$(CACHE) scripts/deps.sh

# The test command (README, .ci/run): set-up, build, every suite, one verdict.
check:
	CACHE=$(CACHE) scripts/deps.sh
	$(MAKE) all selftests
	CACHE=$(CACHE) scripts/check.sh

KERNEL ?= bookworm
vm-check: lib selftests
	CACHE=$(CACHE) scripts/vm-run.sh $(KERNEL)

install: lib tools
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/linux $(DESTDIR)$(BINDIR)
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/liblzchan.so
	install -m 644 libchan/lzchan.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 libchan/lzchan.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 kmod/uapi/linux/lzchan.h $(DESTDIR)$(INCLUDEDIR)/linux/
	install -m 755 $(TOOLS) $(DESTDIR)$(BINDIR)/

clean:
	rm -f libchan/*.o libchan/*.os libchan/*.a libchan/*.so* libchan/lzchan.pc $(TOOLS)
	$(MAKE) -C selftests clean
	@if [ -n "$(KDIR)" ] && [ -f "$(KDIR)/Makefile" ]; then \
		$(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
