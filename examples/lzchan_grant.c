// SPDX-License-Identifier: MIT
/*
 * A host service hands one channel to containers as endpoints: file
 * descriptors that carry the sender role on that channel and nothing else.
 *
 *   lzchan_grant NAME [CONTAINERS [MSGS]]    (default 2 containers, 10000 each)
 *
 * The service creates channel NAME (mode 0600: nobody else may open it by
 * name), listens on a Unix socket in a directory of its own, and grants
 * one sender endpoint per connection (lzchan_grant_send()).  Each
 * "container" is made the way a rootless Podman makes one for
 *
 *   podman run -v RUNDIR:/tmp/app ...      (no --device, no --ipc=, no --cap-add)
 *
 * that is: an unprivileged user (the caller, or uid 1000 when run as
 * root) makes new user, mount and IPC namespaces, maps its own uid to root
 * inside, mounts an empty /dev (no /dev/lzchan) and a /tmp of its own with
 * the service's directory bind-mounted at /tmp/app.  It cannot open the
 * channel by name -- there is no device, and its IPC namespace has no
 * channels -- so it connects to the socket, receives an endpoint
 * (lzchan_endpoint_recv()), builds a handle from it (lzchan_open_fd()) and
 * sends MSGS numbered messages.
 *
 * The service checks every message (per container: in order, none lost,
 * payload intact) and, for each lane, who the kernel says sent them
 * (lzchan_peer()): the container's process by its host pid, with the
 * user's host uid -- the credentials of the process that attached,
 * stamped by the kernel, which the service compares with what the socket
 * said about the process that connected (SO_PEERCRED).
 *
 * Endpoints that carry one role, record who attached and can be revoked
 * need the lzchan module (a module with LZCHAN_FEAT_ENDPOINT).  On the
 * shared-memory backend the nearest thing is the channel file itself,
 * which carries no role and, without the receiver's doorbell, no
 * credentials: this program, which checks both, says so and exits with
 * status 3 there.
 *
 * Exit status: 0 all messages checked, 1 failure, 2 usage, 3 no endpoints
 * here (no module).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE		/* unshare(), setresuid(), accept4(), struct ucred */
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lzchan.h>

#define TIMEOUT_NS	(30LL * 1000000000LL)
#define TIMEOUT_MS	30000
#define RUNTIME_UID	1000		/* the rootless runtime's user, as root */
#define CTR_RUNDIR	"/tmp/app"	/* where the container sees the socket */
#define SOCK_NAME	"lzchan.sock"
#define MAX_CONTAINERS	16

struct msg {
	uint32_t container;
	uint32_t pad;
	uint64_t seq;
	uint64_t check;
};

static uint64_t check_of(uint32_t container, uint64_t seq)
{
	return (seq + 1) * 0x9e3779b97f4a7c15ULL ^ container;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "lzchan_grant: %s: %s\n", what, strerror(-err));
	return 1;
}

/* ---- the container ---- */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -errno;
	close(fd);
	return r;
}

/*
 * What a rootless runtime does before it starts the container's process:
 * namespaces owned by the user, the user as root inside, an empty /dev,
 * a private /tmp with the one directory the service shares.
 */
static int enter_container(const char *rundir)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	char map[64], src[64];
	int dir, r;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC))
		return fail("container: unshare (user namespaces disabled?)", -errno);
	/* Its own id, and no other, is root inside. */
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned int)uid);
	r = write_file("/proc/self/uid_map", map);
	if (r)
		return fail("container: uid_map", r);
	r = write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned int)gid);
	if (!r)
		r = write_file("/proc/self/gid_map", map);
	if (r)
		return fail("container: gid_map", r);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return fail("container: private mounts", -errno);
	/* The -v source, looked up in the container's mount namespace. */
	dir = open(rundir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return fail(rundir, -errno);
	/* No --device: an empty /dev. */
	if (mount("ctr-dev", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k"))
		return fail("container: /dev", -errno);
	/* -v RUNDIR:/tmp/app on a /tmp of its own. */
	if (mount("ctr-tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m") ||
	    mkdir(CTR_RUNDIR, 0755))
		return fail("container: /tmp", -errno);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", dir);
	if (mount(src, CTR_RUNDIR, NULL, MS_BIND, NULL))
		return fail("container: bind mount of the service's directory", -errno);
	close(dir);
	return chdir("/") ? fail("container: chdir", -errno) : 0;
}

static int container(const char *name, const char *rundir, uint32_t id, uint64_t msgs)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct lzchan *tx;
	struct msg m = { .container = id };
	int sock, ep, r;

	/* As root, play the unprivileged user a rootless runtime runs as
	 * (dumpable again, as that user's own processes are: its /proc/self
	 * is then its own to write the id maps). */
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) || setresgid(RUNTIME_UID, RUNTIME_UID, RUNTIME_UID) ||
	     setresuid(RUNTIME_UID, RUNTIME_UID, RUNTIME_UID) ||
	     prctl(PR_SET_DUMPABLE, 1)))
		return fail("container: become the runtime's user", -errno);
	r = enter_container(rundir);
	if (r)
		return r;

	/* Nothing to open by name in here. */
	r = lzchan_open(&tx, name, LZCHAN_SENDER, NULL);
	if (r == 0 || access("/dev/lzchan", F_OK) == 0) {
		fprintf(stderr, "lzchan_grant: container %u: the channel is reachable by name\n", id);
		return 1;
	}
	if (id == 0)
		printf("container: uid %u inside, no /dev/lzchan; opening \"%s\" by name: %s\n",
		       (unsigned int)geteuid(), name, strerror(-r));

	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return fail("container: socket", -errno);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", CTR_RUNDIR, SOCK_NAME);
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)))
		return fail(sa.sun_path, -errno);
	ep = lzchan_endpoint_recv(sock, TIMEOUT_MS);
	close(sock);
	if (ep < 0)
		return fail("container: receive the endpoint", ep);
	/* The endpoint is the handle's from here on. */
	r = lzchan_open_fd(&tx, ep, LZCHAN_SENDER, NULL);
	if (r)
		return fail("container: open the endpoint", r);
	for (m.seq = 0; m.seq < msgs; m.seq++) {
		m.check = check_of(id, m.seq);
		r = lzchan_send_wait(tx, &m, sizeof(m), TIMEOUT_NS);
		if (r)
			break;
	}
	lzchan_close(tx);		/* a clean end of our lane */
	return r ? fail("container: send", r) : 0;
}

/* ---- the service ---- */

struct sender {
	pid_t pid;		/* the container's process (host pid) */
	pid_t conn_pid;		/* who connected, by SO_PEERCRED */
	uid_t conn_uid;
	uint64_t endpoint;	/* the id it was granted */
	uint64_t next;		/* next sequence number */
	uint32_t lane;		/* its lane, once seen */
	int ended;
};

/* Grant one endpoint per connection until @n have been handed out. */
static int serve_grants(int lsock, const char *name, struct sender *s, uint32_t n)
{
	uint32_t granted = 0, i;
	int conn, r, st;

	while (granted < n) {
		struct pollfd p = { .fd = lsock, .events = POLLIN };
		struct ucred cred;
		socklen_t len = sizeof(cred);

		r = poll(&p, 1, 1000);
		if (r < 0 && errno != EINTR)
			return fail("poll", -errno);
		if (r <= 0) {
			/* A container that died before connecting. */
			for (i = 0; i < n; i++)
				if (s[i].pid > 0 && waitpid(s[i].pid, &st, WNOHANG) == s[i].pid) {
					fprintf(stderr, "lzchan_grant: container %u exited early (status %d)\n",
						i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
					s[i].pid = -1;
					return 1;
				}
			continue;
		}
		conn = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			return fail("accept", -errno);
		if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
			close(conn);
			return fail("SO_PEERCRED", -errno);
		}
		/* Which of ours is it?  (A real service decides here whom it
		 * serves: the socket's mode is the first gate.) */
		for (i = 0; i < n && s[i].pid != cred.pid; i++)
			;
		if (i == n) {
			fprintf(stderr, "lzchan_grant: a connection from pid %d, not one of ours\n",
				(int)cred.pid);
			close(conn);
			continue;
		}
		r = lzchan_grant_send(conn, name, LZCHAN_SENDER, &s[i].endpoint);
		close(conn);
		if (r)
			return fail("grant", r);
		s[i].conn_pid = cred.pid;
		s[i].conn_uid = cred.uid;
		granted++;
	}
	return 0;
}

/* Who sent on @lane, as the kernel stamped it at the attach. */
static int check_peer(struct lzchan *rx, struct sender *s, uint32_t id, uint32_t lane)
{
	int32_t pid;
	uint32_t uid, gid;
	int r = lzchan_peer(rx, lane, &pid, &uid, &gid);

	if (r)
		return fail("lzchan_peer", r);
	printf("lane %u: container %u, endpoint %llu: pid %d uid %u gid %u\n", lane, id,
	       (unsigned long long)s->endpoint, (int)pid, uid, gid);
	if (pid != s->pid || pid != s->conn_pid || uid != s->conn_uid) {
		fprintf(stderr, "lzchan_grant: lane %u: expected pid %d uid %u (the process that "
			"connected)\n", lane, (int)s->conn_pid, (unsigned int)s->conn_uid);
		return 1;
	}
	return 0;
}

static int receive_all(struct lzchan *rx, struct sender *s, uint32_t n, uint64_t msgs)
{
	uint32_t ended = 0, lane, i;
	struct msg m;
	int r;

	while (ended < n) {
		r = lzchan_recv_wait(rx, &m, sizeof(m), &lane, TIMEOUT_NS);
		if (r == -EPIPE) {
			for (i = 0; i < n && s[i].lane != lane; i++)
				;
			if (i == n || s[i].ended || s[i].next != msgs) {
				fprintf(stderr, "lzchan_grant: lane %u ended early\n", lane);
				return 1;
			}
			if (lzchan_end_cause(rx, lane) != LZCHAN_END_CLOSED) {
				fprintf(stderr, "lzchan_grant: lane %u: its sender died\n", lane);
				return 1;
			}
			s[i].ended = 1;
			ended++;
			continue;
		}
		if (r < 0)
			return fail("receive", r);
		if (r != (int)sizeof(m) || m.container >= n) {
			fprintf(stderr, "lzchan_grant: lane %u: not one of our messages\n", lane);
			return 1;
		}
		i = m.container;
		/* First message of a container: its lane, and who is there. */
		if (s[i].lane == LZCHAN_LANE_NONE) {
			s[i].lane = lane;
			if (check_peer(rx, &s[i], i, lane))
				return 1;
		}
		if (lane != s[i].lane || m.seq != s[i].next || m.check != check_of(i, m.seq)) {
			fprintf(stderr, "lzchan_grant: container %u: message %llu wrong (lane %u)\n",
				i, (unsigned long long)s[i].next, lane);
			return 1;
		}
		s[i].next++;
	}
	return 0;
}

/* The module, with endpoints?  1, or 0 after saying why not. */
static int have_endpoints(void)
{
	struct lzchan_features f;

	if (lzchan_dev_features(&f) == 0 && (f.features & LZCHAN_FEAT_ENDPOINT))
		return 1;
	printf("lzchan_grant: no endpoints here: they need the lzchan module with "
	       "LZCHAN_FEAT_ENDPOINT (/dev/lzchan); the shared-memory backend can only "
	       "hand out the channel file itself, with no role limit and no credentials "
	       "a container could show: nothing to show\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct sender s[MAX_CONTAINERS];
	uint32_t n = 2, i;
	uint64_t msgs = 10000;
	struct lzchan_opts o;
	struct lzchan_geom geo;
	struct lzchan *rx;
	char rundir[] = "/tmp/lzchan-grant.XXXXXX";
	int lsock, r, st, failed = 0;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: %s NAME [CONTAINERS [MSGS]]\n", argv[0]);
		return 2;
	}
	if (argc > 2)
		n = strtoul(argv[2], NULL, 0);
	if (argc > 3)
		msgs = strtoull(argv[3], NULL, 0);
	if (!n || n > MAX_CONTAINERS) {
		fprintf(stderr, "lzchan_grant: CONTAINERS must be 1 to %d\n", MAX_CONTAINERS);
		return 2;
	}
	if (!have_endpoints())
		return 3;

	/* The channel: ours alone by name (mode 0600), a lane per container. */
	lzchan_opts_init(&o);
	o.max_senders = n;
	r = lzchan_open(&rx, argv[1], LZCHAN_RECEIVER | LZCHAN_CREATE | LZCHAN_EXCL, &o);
	if (r)
		return fail(argv[1], r);
	if (lzchan_geometry(rx, &geo) || geo.backend != LZCHAN_BACKEND_DEV) {
		lzchan_close(rx);
		lzchan_unlink(argv[1]);
		have_endpoints();
		printf("lzchan_grant: (LZCHAN_BACKEND chose the shared-memory backend)\n");
		return 3;
	}

	/* Its socket, in a directory the containers get bind-mounted. */
	if (!mkdtemp(rundir)) {
		failed = fail("mkdtemp", -errno);
		goto out_chan;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", rundir, SOCK_NAME);
	lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) || listen(lsock, n)) {
		failed = fail(sa.sun_path, -errno);
		goto out_dir;
	}
	/* Who may connect gets an endpoint: the socket is the runtime
	 * user's only (root runs the containers as RUNTIME_UID). */
	if (chmod(rundir, 0711) || chmod(sa.sun_path, 0600) ||
	    (geteuid() == 0 && chown(sa.sun_path, RUNTIME_UID, RUNTIME_UID))) {
		failed = fail("socket permissions", -errno);
		goto out_sock;
	}

	fflush(stdout);
	for (i = 0; i < n; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].lane = LZCHAN_LANE_NONE;
		s[i].pid = fork();
		if (s[i].pid < 0) {
			failed = fail("fork", -errno);
			n = i;
			goto out_wait;
		}
		if (s[i].pid == 0) {
			/* Leave the service's handle and socket alone. */
			close(lsock);
			r = container(argv[1], rundir, i, msgs);
			fflush(stdout);
			_exit(r);
		}
	}
	failed = serve_grants(lsock, argv[1], s, n) || receive_all(rx, s, n, msgs);

out_wait:
	if (failed)
		for (i = 0; i < n; i++)
			if (s[i].pid > 0)
				kill(s[i].pid, SIGKILL);
	for (i = 0; i < n; i++)
		if (s[i].pid > 0 && (waitpid(s[i].pid, &st, 0) != s[i].pid ||
				     !WIFEXITED(st) || WEXITSTATUS(st)))
			failed = 1;
out_sock:
	close(lsock);
	unlink(sa.sun_path);
out_dir:
	rmdir(rundir);
out_chan:
	lzchan_close(rx);
	lzchan_unlink(argv[1]);
	if (failed)
		return 1;
	printf("%u containers, %llu messages each over granted endpoints: received and checked "
	       "in order, senders' credentials as the kernel stamped them\n",
	       n, (unsigned long long)msgs);
	return 0;
}
