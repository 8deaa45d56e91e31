// SPDX-License-Identifier: GPL-2.0-only
/*
 * liblzchan setup calls.  Runs on the host (no module) and in the VM
 * (module loaded; the rig sets LZCHAN_EXPECT_DEV=1 so a missing device fails
 * instead of being taken for the host case).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <lzchan.h>

#include "kselftest_harness.h"

static int expect_dev(void)
{
	const char *e = getenv("LZCHAN_EXPECT_DEV");

	return e && *e == '1';
}

TEST(version_matches_header)
{
	EXPECT_EQ(LZCHAN_VERSION_MAJOR, lzchan_version_major());
	EXPECT_EQ(LZCHAN_VERSION_MINOR, lzchan_version_minor());
}

TEST(dev_features)
{
	struct lzchan_features f = { 0 };
	int ret = lzchan_dev_features(&f);

	if (!expect_dev() && access(LZCHAN_DEVICE_PATH, F_OK) < 0) {
		/* Host without the module: the error must say "not there". */
		EXPECT_EQ(-ENOENT, ret);
		return;
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(LZCHAN_ABI_VERSION, f.abi_version);
	EXPECT_EQ(sysconf(_SC_PAGESIZE), f.page_size);
}

TEST_HARNESS_MAIN
