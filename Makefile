# SPDX-License-Identifier: GPL-2.0-only
#
# lzchan top-level build.  (The kernel's own build reads ./Kbuild instead.)
#
#   make            libchan (shared + static), tools, and lzchan.ko for the
#                   running kernel if its headers are installed (else a note)
#   make modules    the module alone: for KDIR=... if given, else for the
#                   running kernel (fails, saying what to do, without headers)
#   make deps       install/cache everything the build and tests need (root)
#   make check      deps, build, host tests, VM tests on all four kernels
#   make vm-check KERNEL=bookworm|trixie|trixie-backports|debug   one VM run
#   make run        the main job: two processes exchange messages
#   make install    DESTDIR=, PREFIX= (default /usr/local); make uninstall;
#                   or its parts: install-lib, install-tools, install-module
#   make dkms-install   module sources to /usr/src/lzchan-VERSION for DKMS

VERSION		:= 0.3.0
SONAME		:= liblzchan.so.1
CACHE		?= $(CURDIR)/.cache
# The module is built for KDIR= when given, else for the running kernel
# (when its headers are installed: see 'modules' below).
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
LIB_HDRS	:= libchan/lzchan.h libchan/lzchan_fast.h libchan/lzchan_internal.h kmod/uapi/linux/lzchan.h
LIB_A		:= libchan/liblzchan.a
LIB_SO		:= libchan/$(SONAME)
TOOLS		:= tools/lzchan tools/lzchan-demo tools/lzchan-bench
BENCH_SRCS	:= $(wildcard tools/bench/*.c)

.PHONY: all lib tools modules selftests deps check vm-check clean run
all: lib tools
	@if [ -n "$(KDIR)" ]; then $(MAKE) --no-print-directory modules; else \
		echo "note: lzchan.ko not built: no kernel headers for the running kernel" \
		     "$$(uname -r) ('make modules' says what to do)"; fi

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

# The benchmark suite: libnuma for placement, PAPI for cache misses;
# iceoryx classic, when Debian's is installed, to compare pub/sub with.
IOX_INC		:= $(firstword $(wildcard /usr/include/iceoryx/v*/iceoryx_binding_c/publisher.h))
IOX_FLAGS	:= $(if $(IOX_INC),-DLZB_HAVE_ICEORYX -I$(patsubst %/iceoryx_binding_c/publisher.h,%,$(IOX_INC)))
IOX_LIBS	:= $(if $(IOX_INC),-liceoryx_binding_c)
tools/lzchan-bench: $(BENCH_SRCS) tools/bench/lzb.h $(LIB_A) $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) $(IOX_FLAGS) -Itools/bench -o $@ $(BENCH_SRCS) $(LIB_A) \
		-lpapi -lnuma -lpthread -lm $(IOX_LIBS) $(LDFLAGS)

# The bridge between hosts (tools/bridge, lzchan-bridged(8)): UCX carries
# it, libsodium keys it.  Built when both are installed ('make deps' puts
# them there); without them, a note says so and the rest builds.
BRIDGE_SRCS	:= $(wildcard tools/bridge/*.c)
BRIDGE_HDRS	:= $(wildcard tools/bridge/*.h)
BRIDGE_PKGS	:= ucx libsodium
HAVE_BRIDGE	:= $(shell pkg-config --exists $(BRIDGE_PKGS) 2>/dev/null && echo 1)

tools/lzchan-bridged: $(BRIDGE_SRCS) $(BRIDGE_HDRS) $(LIB_A) $(LIB_HDRS)
	$(CC) $(LZ_CPPFLAGS) $(LZ_CFLAGS) $$(pkg-config --cflags $(BRIDGE_PKGS)) -Itools/bridge \
		-o $@ $(BRIDGE_SRCS) $(LIB_A) $$(pkg-config --libs $(BRIDGE_PKGS)) $(LDFLAGS)

ifeq ($(HAVE_BRIDGE),1)
tools: $(TOOLS) tools/lzchan-bridged
else
tools: $(TOOLS)
	@echo "note: tools/lzchan-bridged not built: UCX or libsodium is missing" \
	      "(apt-get install libucx-dev libsodium-dev, or 'make deps')"
endif

# The main job: two unrelated processes exchange messages over a channel.
# It sets itself up as 'make check' does, with the userspace packages only.
run:
	CACHE=$(CACHE) scripts/deps.sh --userspace
	$(MAKE) lib tools
	scripts/run.sh

modules:
	@if [ -z "$(KDIR)" ]; then $(CURDIR)/scripts/kdir.sh --why >&2; exit 1; fi
	@test -f "$(KDIR)/Makefile" || \
		{ echo "make modules: KDIR=$(KDIR) is not a kernel build directory" \
		       "(no Makefile there)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules
	@rel=$$($(CURDIR)/scripts/kdir.sh --release $(KDIR)); \
	if [ "$$rel" = "$$(uname -r)" ]; then \
		echo "built kmod/lzchan.ko for the running kernel $$rel"; \
	else \
		echo "built kmod/lzchan.ko for kernel $${rel:-unknown} ($(KDIR));" \
		     "it will not load into the running kernel $$(uname -r)"; \
	fi

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

# ---- installation (Documentation/admin/guide.rst) ----
# make install is three parts, each usable alone:
#   install-lib     the library (.so.1, its symlink, .a), the headers
#                   (lzchan.h and the UAPI <linux/lzchan.h>), lzchan.pc and
#                   the man pages of sections 3 and 7.  Under PREFIX only:
#                   an unprivileged user can run it.
#   install-tools   the tools and their man pages (sections 1 and 8) and,
#                   where the bridge is built, its systemd unit
#                   (SYSTEMDUNITDIR, default $(PREFIX)/lib/systemd/system).
#                   PREFIX only.
#   install-module  what the module needs on the system: its sources for
#                   DKMS (as dkms-install), the udev rule, the modules-load.d
#                   and sysusers.d snippets, the modprobe.d example (as
#                   documentation) and, without DESTDIR, the group "lzchan".
#                   These go where udev, systemd and DKMS look, whatever the
#                   PREFIX; set UDEVRULESDIR=, MODULESLOADDIR= or
#                   SYSUSERSDIR= empty to skip one.
# Without DESTDIR, as root, install-lib runs ldconfig for a system LIBDIR.
MANDIR		?= $(PREFIX)/share/man
DOCDIR		?= $(PREFIX)/share/doc/lzchan
PKGCONFIGDIR	?= $(LIBDIR)/pkgconfig
UDEVRULESDIR	?= /usr/lib/udev/rules.d
MODULESLOADDIR	?= /usr/lib/modules-load.d
SYSUSERSDIR	?= /usr/lib/sysusers.d
# The bridge's unit, with the tools: under PREFIX like them (systemd reads
# /usr/lib/systemd/system and /usr/local/lib/systemd/system); set
# SYSTEMDUNITDIR=/usr/lib/systemd/system to put it there from another
# PREFIX, or empty to skip it.
SYSTEMDUNITDIR	?= $(PREFIX)/lib/systemd/system
DKMS_SRCDIR	?= /usr/src/lzchan-$(VERSION)
INSTALL_TOOLS	?= $(TOOLS) $(if $(HAVE_BRIDGE),tools/lzchan-bridged)
INSTALL_MAN8	= $(if $(HAVE_BRIDGE),$(wildcard man/man8/*.8))
INSTALL_MAN1	= $(wildcard man/man1/*.1)
INSTALL_MAN3	= $(wildcard man/man3/*.3)
INSTALL_MAN7	= $(wildcard man/man7/*.7)
# What DKMS needs to build the module: Kbuild files, sources, UAPI header.
DKMS_FILES	= Kbuild dkms.conf COPYING $(wildcard LICENSES/*) kmod/Kbuild \
		  $(filter-out %.mod.c,$(wildcard kmod/*.c)) $(wildcard kmod/*.h) \
		  kmod/uapi/linux/lzchan.h
# ldconfig only for a real install by root into a directory it searches.
LDCONFIG	= $(if $(DESTDIR),,if [ "$$(id -u)" = 0 ] && \
		  ldconfig -v -N 2>/dev/null | grep -q '^$(LIBDIR):'; then ldconfig; fi)

.PHONY: install install-lib install-tools install-module
.PHONY: uninstall uninstall-lib uninstall-tools uninstall-module
.PHONY: dkms-install dkms-uninstall
install: install-lib install-tools install-module

install-lib: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(INCLUDEDIR)/linux
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/liblzchan.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    libchan/lzchan.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/lzchan.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/lzchan.pc
	install -m 644 libchan/lzchan.h libchan/lzchan_fast.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 kmod/uapi/linux/lzchan.h $(DESTDIR)$(INCLUDEDIR)/linux/
	$(if $(INSTALL_MAN3),install -d $(DESTDIR)$(MANDIR)/man3 && \
		install -m 644 $(INSTALL_MAN3) $(DESTDIR)$(MANDIR)/man3/)
	$(if $(INSTALL_MAN7),install -d $(DESTDIR)$(MANDIR)/man7 && \
		install -m 644 $(INSTALL_MAN7) $(DESTDIR)$(MANDIR)/man7/)
	@$(LDCONFIG)

install-tools: tools
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(INSTALL_TOOLS) $(DESTDIR)$(BINDIR)/
	$(if $(INSTALL_MAN1),install -d $(DESTDIR)$(MANDIR)/man1 && \
		install -m 644 $(INSTALL_MAN1) $(DESTDIR)$(MANDIR)/man1/)
	$(if $(INSTALL_MAN8),install -d $(DESTDIR)$(MANDIR)/man8 && \
		install -m 644 $(INSTALL_MAN8) $(DESTDIR)$(MANDIR)/man8/)
	$(if $(and $(HAVE_BRIDGE),$(SYSTEMDUNITDIR)),install -d $(DESTDIR)$(SYSTEMDUNITDIR) && \
		sed 's|@BINDIR@|$(BINDIR)|g' packaging/lzchan-bridged.service \
			> $(DESTDIR)$(SYSTEMDUNITDIR)/lzchan-bridged.service)

install-module: dkms-install
	install -d $(DESTDIR)$(DOCDIR)
	$(if $(UDEVRULESDIR),install -D -m 644 packaging/60-lzchan.rules \
		$(DESTDIR)$(UDEVRULESDIR)/60-lzchan.rules)
	$(if $(MODULESLOADDIR),install -D -m 644 packaging/modules-load.d/lzchan.conf \
		$(DESTDIR)$(MODULESLOADDIR)/lzchan.conf)
	$(if $(SYSUSERSDIR),install -D -m 644 packaging/sysusers.d/lzchan.conf \
		$(DESTDIR)$(SYSUSERSDIR)/lzchan.conf)
	install -m 644 packaging/modprobe.d/lzchan.conf $(DESTDIR)$(DOCDIR)/modprobe-lzchan.conf
	$(if $(DESTDIR),,getent group lzchan >/dev/null || groupadd --system lzchan)
	@echo "module sources in $(DESTDIR)$(DKMS_SRCDIR): build and install the module" \
	      "with 'dkms install lzchan/$(VERSION)'"

uninstall: uninstall-lib uninstall-tools uninstall-module

uninstall-lib:
	rm -f $(DESTDIR)$(LIBDIR)/liblzchan.a $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/liblzchan.so $(DESTDIR)$(PKGCONFIGDIR)/lzchan.pc \
		$(DESTDIR)$(INCLUDEDIR)/lzchan.h $(DESTDIR)$(INCLUDEDIR)/lzchan_fast.h \
		$(DESTDIR)$(INCLUDEDIR)/linux/lzchan.h \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(INSTALL_MAN3))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man7/,$(notdir $(INSTALL_MAN7)))
	@$(LDCONFIG)

uninstall-tools:
	rm -f $(addprefix $(DESTDIR)$(BINDIR)/,$(notdir $(INSTALL_TOOLS))) \
		$(addprefix $(DESTDIR)$(MANDIR)/man1/,$(notdir $(INSTALL_MAN1))) \
		$(DESTDIR)$(BINDIR)/lzchan-bridged \
		$(addprefix $(DESTDIR)$(MANDIR)/man8/,$(notdir $(wildcard man/man8/*.8))) \
		$(if $(SYSTEMDUNITDIR),$(DESTDIR)$(SYSTEMDUNITDIR)/lzchan-bridged.service)

# Run 'dkms remove lzchan/$(VERSION) --all' first if DKMS knows it.
uninstall-module: dkms-uninstall
	rm -f $(DESTDIR)$(DOCDIR)/modprobe-lzchan.conf
	$(if $(UDEVRULESDIR),rm -f $(DESTDIR)$(UDEVRULESDIR)/60-lzchan.rules)
	$(if $(MODULESLOADDIR),rm -f $(DESTDIR)$(MODULESLOADDIR)/lzchan.conf)
	$(if $(SYSUSERSDIR),rm -f $(DESTDIR)$(SYSUSERSDIR)/lzchan.conf)
	-rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null

# The module's sources for DKMS, with dkms.conf's version set to ours.
# Then: dkms install lzchan/$(VERSION)   (add + build + install).
dkms-install:
	install -d $(DESTDIR)$(DKMS_SRCDIR)
	tar -c $(DKMS_FILES) | tar -x -C $(DESTDIR)$(DKMS_SRCDIR) --no-same-owner
	sed -i 's/^PACKAGE_VERSION=.*/PACKAGE_VERSION="$(VERSION)"/' \
		$(DESTDIR)$(DKMS_SRCDIR)/dkms.conf

dkms-uninstall:
	rm -rf $(DESTDIR)$(DKMS_SRCDIR)

clean:
	rm -f libchan/*.o libchan/*.os libchan/*.a libchan/*.so* libchan/lzchan.pc $(TOOLS) \
		tools/lzchan-bridged
	$(MAKE) -C selftests clean
	@if [ -n "$(KDIR)" ] && [ -f "$(KDIR)/Makefile" ]; then \
		$(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
