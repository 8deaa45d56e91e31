// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/* Library calls that talk to /dev/lzchan. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lzchan.h"

int lzchan_version_major(void)
{
	return LZCHAN_VERSION_MAJOR;
}

int lzchan_version_minor(void)
{
	return LZCHAN_VERSION_MINOR;
}

static int __lzchan_dev_open(void)
{
	int fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int lzchan_dev_features(struct lzchan_features *out)
{
	struct lzchan_features f;
	int fd, ret = 0;

	fd = __lzchan_dev_open();
	if (fd < 0)
		return fd;
	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	if (ioctl(fd, LZCHAN_IOC_FEATURES, &f) < 0)
		ret = -errno;
	else
		*out = f;
	close(fd);
	return ret;
}
