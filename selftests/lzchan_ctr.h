/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * "Containers" for the /dev/lzchan selftests, built the way a container
 * runtime builds them for 'docker run --device /dev/lzchan' or 'podman run
 * --device' with user namespaces: a new user, mount and IPC namespace (or
 * another container's IPC namespace, as with --ipc=container:NAME), uid/gid
 * 0 mapped to a host range, and a /dev of its own (a tmpfs) holding only
 * the bind-mounted device node -- or nothing (ctr_spec.no_device: a
 * container run without --device, which gets endpoints only).  Made by root (as dockerd does) or by an
 * unprivileged host user (as rootless runtimes do: ctr_spec.owner).
 * Include after lzchan_test.h.
 */
#ifndef LZCHAN_CTR_H
#define LZCHAN_CTR_H

#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/prctl.h>

#define CTR_IDS		65536		/* ids mapped into each container */
#define CTR_MAP_A	100000		/* host id of container root, tenant A */
#define CTR_MAP_B	200000		/* another tenant's range */
#define CTR_NOGROUP	((gid_t)-1)
#define CTR_WAIT_MS	120000		/* bound on a handshake (a hang guard) */

struct ctr_spec {
	uid_t map;		/* host id of the container's uid/gid 0 */
	uid_t owner;		/* host uid that makes it (0: root) */
	pid_t join_ipc;		/* 0: a new IPC namespace; else this pid's */
	uid_t uid;		/* run as this uid/gid inside (0: root) */
	gid_t gid;
	gid_t group;		/* one supplementary group, or CTR_NOGROUP */
	bool no_device;		/* an empty /dev: no /dev/lzchan at all (a
				 * container that gets endpoints only) */
	int (*fn)(void *arg);
	void *arg;
};

/* Read one byte with a bound: 0, or -1 on EOF, error or timeout. */
static inline int ctr_read(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b;

	if (poll(&p, 1, CTR_WAIT_MS) != 1)
		return -1;
	return read(fd, &b, 1) == 1 ? 0 : -1;
}

static inline int ctr_signal(int fd)
{
	return write(fd, "x", 1) == 1 ? 0 : -1;
}

static inline int ctr_write_file(pid_t pid, const char *file, const char *text)
{
	char path[64];
	int fd, n = strlen(text), ok;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, text, n) == n;
	close(fd);
	return ok ? 0 : -1;
}

/* The runtime's side: write the container's id maps. */
static inline int ctr_map(pid_t pid, uid_t base)
{
	char map[64];

	snprintf(map, sizeof(map), "0 %u %u\n", base, CTR_IDS);
	if (ctr_write_file(pid, "uid_map", map))
		return -1;
	return ctr_write_file(pid, "gid_map", map);
}

/*
 * The container's /dev: a fresh tmpfs over /dev holding only lzchan,
 * bind-mounted from the host's node (what --device does when the runtime
 * may not mknod, i.e. in a user namespace), or with @no_device nothing at
 * all (no --device).  Mount events stay private.
 */
static inline int ctr_dev(bool no_device)
{
	char src[64];
	int fd, f;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	if (no_device) {
		if (mount("ctrdev", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k"))
			return -1;
		return access(LZCHAN_DEVICE_PATH, F_OK) && access("/dev/null", F_OK) ? 0 : -1;
	}
	fd = open(LZCHAN_DEVICE_PATH, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (mount("ctrdev", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k"))
		return -1;
	f = open(LZCHAN_DEVICE_PATH, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (f < 0)
		return -1;
	close(f);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(src, LZCHAN_DEVICE_PATH, NULL, MS_BIND, NULL))
		return -1;
	close(fd);
	/* Only what was passed through is there. */
	return access("/dev/null", F_OK) ? 0 : -1;
}

static inline int ctr_child(const struct ctr_spec *s, int up, int down)
{
	int flags = CLONE_NEWUSER | CLONE_NEWNS, fd;
	char path[64];
	gid_t g = s->group;

	if (s->join_ipc) {
		snprintf(path, sizeof(path), "/proc/%d/ns/ipc", s->join_ipc);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || setns(fd, CLONE_NEWIPC))
			return 100;
		close(fd);
	} else {
		flags |= CLONE_NEWIPC;
	}
	/* A rootless runtime: the namespaces belong to this host user. */
	if (s->owner && (setgroups(0, NULL) || setresgid(s->owner, s->owner, s->owner) ||
			 setresuid(s->owner, s->owner, s->owner)))
		return 106;
	/* After the id change, which clears it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (unshare(flags))
		return 101;
	if (ctr_signal(up) || ctr_read(down))
		return 102;
	/* Become the container's root (host id s->map), then set up /dev. */
	if (setgroups(0, NULL) || setresgid(0, 0, 0) || setresuid(0, 0, 0))
		return 103;
	if (ctr_dev(s->no_device))
		return 104;
	/* A container user ('USER 1000', 'docker exec -u'): no capabilities. */
	if (s->uid || s->gid) {
		if (setgroups(g == CTR_NOGROUP ? 0 : 1, &g) ||
		    setresgid(s->gid, s->gid, s->gid) ||
		    setresuid(s->uid, s->uid, s->uid))
			return 105;
	}
	return s->fn(s->arg);
}

/* Start a container running s->fn; its pid, or -1. */
static inline pid_t ctr_start(const struct ctr_spec *s)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up))
		return -1;
	if (pipe(down)) {
		close(up[0]);
		close(up[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(ctr_child(s, up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	if (pid > 0 && (ctr_read(up[0]) || ctr_map(pid, s->map) || ctr_signal(down[1]))) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(up[0]);
	close(down[1]);
	return pid;
}

/* The container's exit status (its function's return), 255 if killed. */
static inline int ctr_wait(pid_t pid)
{
	int status;

	if (pid <= 0 || waitpid(pid, &status, 0) != pid)
		return 254;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

#endif /* LZCHAN_CTR_H */
