// SPDX-License-Identifier: GPL-2.0-only
/*
 * Not a test: a helper for the VM rig's unload check.  It creates a
 * channel, maps it, closes its fd and removes the name, so that only the
 * mapping keeps the module in use; prints "ready" and waits to be killed.
 */
#include <stdio.h>
#include <unistd.h>

#include "lzchan_test.h"

int main(void)
{
	const char *name = lz_name("hold");
	struct lzchan_info in;
	void *p;
	int fd;

	if (lz_create(name, LZ_GEOM_DEFAULT))
		return 1;
	fd = lz_open(name, LZCHAN_OPEN_RECEIVER, NULL);
	if (fd < 0 || lz_info(fd, &in))
		return 2;
	p = lz_map(fd, in.layout.info_off, in.layout.info_size, PROT_READ);
	if (!p || lz_unlink(name))
		return 3;
	close(fd);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
