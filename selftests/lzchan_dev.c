// SPDX-License-Identifier: GPL-2.0-only
/*
 * /dev/lzchan ioctl ABI: argument sizing, reserved fields, unknown commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/lzchan.h>

#include "kselftest_harness.h"

FIXTURE(dev) {
	int fd;
	bool skipped;	/* 6.1's harness runs the body after a setup SKIP */
};

FIXTURE_SETUP(dev)
{
	self->fd = open(LZCHAN_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT) {
		self->skipped = true;
		SKIP(return, "%s absent: lzchan.ko not loaded", LZCHAN_DEVICE_PATH);
	}
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", LZCHAN_DEVICE_PATH,
				      strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(dev, features)
{
	struct lzchan_features f = { .size = sizeof(f) };

	if (self->skipped)
		return;
	ASSERT_EQ(0, ioctl(self->fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(sizeof(f), f.size);
	EXPECT_EQ(LZCHAN_ABI_VERSION, f.abi_version);
	EXPECT_EQ(sysconf(_SC_PAGESIZE), f.page_size);
	EXPECT_EQ(0, f.features & ~LZCHAN_FEAT_ALL);
}

TEST_F(dev, features_size_too_small)
{
	struct lzchan_features f = { .size = offsetof(struct lzchan_features, features) };

	if (self->skipped)
		return;
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(EINVAL, errno);
	f.size = 0;
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(EINVAL, errno);
}

/* A newer caller's larger struct works if the bytes we do not know are 0. */
TEST_F(dev, features_grown_struct)
{
	struct {
		struct lzchan_features f;
		__u64 future[3];
	} big;

	if (self->skipped)
		return;
	memset(&big, 0, sizeof(big));
	big.f.size = sizeof(big);
	ASSERT_EQ(0, ioctl(self->fd, LZCHAN_IOC_FEATURES, &big));
	EXPECT_EQ(LZCHAN_ABI_VERSION, big.f.abi_version);
	EXPECT_EQ(0, big.future[0] | big.future[1] | big.future[2]);

	big.future[2] = 1;
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, &big));
	EXPECT_EQ(E2BIG, errno);
}

TEST_F(dev, features_rejects_flags_and_reserved)
{
	struct lzchan_features f = { .size = sizeof(f), .flags = 1 };

	if (self->skipped)
		return;
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(EINVAL, errno);

	memset(&f, 0, sizeof(f));
	f.size = sizeof(f);
	f.reserved[3] = 1;
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, &f));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, bad_pointer)
{
	if (self->skipped)
		return;
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, NULL));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(-1, ioctl(self->fd, LZCHAN_IOC_FEATURES, (void *)16));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(dev, unknown_commands)
{
	struct lzchan_features f = { .size = sizeof(f) };
	const unsigned long bad[] = {
		_IO(LZCHAN_IOC_MAGIC, 0xff),
		_IO(LZCHAN_IOC_MAGIC, 0x1f),
		_IO(LZCHAN_IOC_MAGIC + 1, 0x00),
		_IOWR(LZCHAN_IOC_MAGIC, 0x00, struct lzchan_features),
		_IOR(LZCHAN_IOC_MAGIC, 0x00, __u32),
		0,
	};
	size_t i;

	if (self->skipped)
		return;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-1, ioctl(self->fd, bad[i], &f))
			TH_LOG("cmd 0x%lx", bad[i]);
		EXPECT_EQ(ENOTTY, errno) TH_LOG("cmd 0x%lx", bad[i]);
	}
}

TEST_HARNESS_MAIN
