/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * liblzchan: shared-memory message channels between processes.
 *
 * A channel has one receiver and up to max_senders senders.  Each sender
 * owns a lane, a single-producer ring in shared memory; sending and
 * receiving touch only that memory (no system call and no locked
 * instruction per message while the receiver is awake).  A receiver that
 * finds nothing to do spins a while, then parks; only then does a sender
 * make a system call, once, to wake it.
 *
 * Backends: /dev/lzchan (the lzchan kernel module) when it is there, else
 * named shared memory in /dev/shm with futex wakeups.  LZCHAN_BACKEND=dev,
 * shm or auto (the default) in the environment forces one.
 *
 * Conventions: every function returns 0 (or a count or length) on success
 * and a negative errno on failure; errno itself is never the error channel.
 * No global state: any number of channels may be open in one process.
 *
 * Threads: a handle belongs to one thread at a time; the library takes no
 * lock.  Many threads sending to one receiver each open their own sender
 * handle, hence their own lane -- per-thread endpoints, never a shared one
 * behind a lock.  The receiver's handle is likewise one thread's.
 */
#ifndef LZCHAN_H
#define LZCHAN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <linux/lzchan.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LZCHAN_VERSION_MAJOR	0
#define LZCHAN_VERSION_MINOR	2

/* Version of the library actually linked (may differ from the header's). */
int lzchan_version_major(void);
int lzchan_version_minor(void);

struct lzchan;

/* lzchan_open() flags: exactly one role, plus creation flags. */
#define LZCHAN_RECEIVER		(1U << 0)
#define LZCHAN_SENDER		(1U << 1)
#define LZCHAN_CREATE		(1U << 2)	/* create the channel if absent */
#define LZCHAN_EXCL		(1U << 3)	/* with CREATE: fail if it exists */

/* Channel options, for creation (and the receiver's tunables). */
struct lzchan_opts {
	uint32_t slot_size;	/* bytes per slot, power of two >= 64 (default 64) */
	uint32_t slot_count;	/* slots per lane, power of two (default 1024) */
	uint32_t max_senders;	/* lanes (default 16) */
	int32_t numa_node;	/* node, or LZCHAN_NODE_LOCAL (default) */
	uint32_t mode;		/* permission bits (default 0600) */
	uint32_t node_strict;	/* 1: pages only from numa_node */
	uint32_t spin_ns;	/* receiver: spin this long before parking
				 * (default 50 us; 0 parks at once) */
	uint32_t publish_every;	/* receiver: publish its position every this
				 * many slots (default slot_count / 4) */
};

/* Fill @o with the defaults above. */
void lzchan_opts_init(struct lzchan_opts *o);

/*
 * Open channel @name as receiver or sender (@flags), creating it first
 * with LZCHAN_CREATE (geometry from @opts, or defaults when NULL).
 * Errors: -ENOENT (no such channel), -EEXIST (CREATE|EXCL and it exists),
 * -EBUSY (a receiver is attached), -EUSERS (no free lane), -EACCES, -EINVAL,
 * -ENOMEM, and the backend's errors (see the man pages).
 */
int lzchan_open(struct lzchan **chp, const char *name, unsigned int flags,
		const struct lzchan_opts *opts);

/* Close: a sender's lane ends (the receiver drains it, then sees
 * end-of-stream); a receiver's departure makes senders' calls fail with
 * -EPIPE.  Messages already in the ring stay there. */
void lzchan_close(struct lzchan *ch);

/* Remove the name; open handles keep working. */
int lzchan_unlink(const char *name);

enum lzchan_backend {
	LZCHAN_BACKEND_DEV = 1,		/* /dev/lzchan */
	LZCHAN_BACKEND_SHM = 2,		/* /dev/shm + futex */
};

struct lzchan_geom {
	uint32_t slot_size;
	uint32_t slot_count;
	uint32_t max_senders;
	uint32_t max_msg;	/* largest message, bytes */
	uint32_t lane;		/* sender: its lane; receiver: LZCHAN_LANE_NONE */
	uint32_t backend;	/* enum lzchan_backend */
	int32_t numa_node;	/* node the memory was asked from */
	uint32_t reserved;
};

int lzchan_geometry(const struct lzchan *ch, struct lzchan_geom *g);
const char *lzchan_backend_name(const struct lzchan *ch);

/* ---- sending ---- */

/*
 * Copy @len bytes as one message.  0, or -EAGAIN (ring full), -EMSGSIZE
 * (len > max_msg), -EPIPE (the receiver is gone), -EBADF (not a sender).
 */
int lzchan_send(struct lzchan *ch, const void *buf, size_t len);

/* As lzchan_send, waiting for room up to @timeout_ns (-1: forever):
 * -ETIMEDOUT when it runs out. */
int lzchan_send_wait(struct lzchan *ch, const void *buf, size_t len,
		     int64_t timeout_ns);

/* Send @n messages, one per iovec; returns how many were sent (the first
 * failure stops the batch), or a negative errno if none was. */
int lzchan_send_batch(struct lzchan *ch, const struct iovec *msgs, unsigned int n);

/*
 * Zero copy: reserve room for a message of up to @len bytes and get where
 * to write it; then lzchan_commit() with the actual length (<= @len)
 * publishes it.  Nothing else may be sent in between.
 */
int lzchan_reserve(struct lzchan *ch, size_t len, void **buf);
int lzchan_commit(struct lzchan *ch, size_t len);

/* ---- receiving ---- */

/*
 * A message in place, valid until released.  A sender can overwrite its own
 * lane's memory at any time: copy what must not change under you.
 */
struct lzchan_msg {
	const void *data;
	uint32_t len;
	uint32_t lane;
	uint32_t __end;		/* private */
	uint32_t __gen;		/* private */
};

/*
 * Receive one message, copied into @buf, from any lane (lzchan_recv) or
 * from @lane (lzchan_recv_lane).  Returns its length, or:
 *   -EAGAIN     nothing there now;
 *   -EPIPE      end of stream: *lane's sender is gone and everything it
 *               sent was received (reported once per sender);
 *   -EMSGSIZE   the message is longer than @cap (left in place; *lane set);
 *   -EBADMSG    the lane holds something that is not a valid message (its
 *               sender wrote garbage); that lane is abandoned;
 *   -EBADF      not a receiver.
 */
int lzchan_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane);
int lzchan_recv_lane(struct lzchan *ch, uint32_t lane, void *buf, size_t cap);

/* As lzchan_recv, blocking: spin for the spin time, then park until a
 * message comes or @timeout_ns passes (-1: forever; -ETIMEDOUT). */
int lzchan_recv_wait(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane,
		     int64_t timeout_ns);

/*
 * Zero copy: the next message (any lane, or one lane) without copying; the
 * same errors as lzchan_recv.  Release it (and with it every earlier
 * message of its lane) with lzchan_release().  Until then, peeking again
 * returns the messages after it in the same lane.
 */
int lzchan_peek(struct lzchan *ch, struct lzchan_msg *m);
int lzchan_peek_lane(struct lzchan *ch, uint32_t lane, struct lzchan_msg *m);
void lzchan_release(struct lzchan *ch, const struct lzchan_msg *m);

/* Up to @n messages from one lane, in place; returns how many (then
 * release the last), or an error as lzchan_peek. */
int lzchan_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n);

/* ---- event loops ---- */

/*
 * A file descriptor that becomes readable when the receiver should look
 * at the channel, for epoll/poll/io_uring.  Before waiting on it call
 * lzchan_arm(): 0 means armed (wait), -EAGAIN means messages are waiting
 * (receive them first).  Receiving disarms.
 * Errors: -EOPNOTSUPP on the shm backend, -EBADF for a sender.
 */
int lzchan_event_fd(struct lzchan *ch);
int lzchan_arm(struct lzchan *ch);

/* Who is on @lane (LZCHAN_LANE_NONE: the receiver), as the kernel saw it.
 * -EOPNOTSUPP on the shm backend, -ENOTCONN when nobody is there. */
int lzchan_peer(struct lzchan *ch, uint32_t lane, int32_t *pid, uint32_t *uid,
		uint32_t *gid);

/*
 * Ask the loaded kernel module what it supports.
 * Returns 0 and fills @out, or -ENOENT when /dev/lzchan does not exist (the
 * module is not loaded), -EACCES when the caller may not open it, or the
 * module's error.
 */
int lzchan_dev_features(struct lzchan_features *out);

/* ---- managing and inspecting channels (since LZCHAN_0.2) ---- */

/*
 * lzchan_create - create channel @name without attaching to it.
 * @opts:  geometry, mode and node (NULL: the defaults); the receiver's
 *         tunables are ignored
 * @flags: 0, or LZCHAN_EXCL to fail when the name exists
 *
 * Returns 1 if this call created the channel, 0 if it existed already
 * (without LZCHAN_EXCL; the existing geometry stands), or -EEXIST (EXCL),
 * -EINVAL (bad name, geometry, mode, node or flags), -ENAMETOOLONG, -EACCES
 * (may not open /dev/lzchan, or create in the shm directory), -ENODEV
 * (LZCHAN_BACKEND=dev but no module), the module's limits (-ENOSPC,
 * -EFBIG, -EDQUOT) or -ENOMEM.
 */
int lzchan_create(const char *name, const struct lzchan_opts *opts,
		  unsigned int flags);

/*
 * lzchan_list - describe the channels visible to the caller.
 * @st:      room for @n descriptions (may be NULL when @n is 0)
 * @n:       entries in @st
 * @backend: if not NULL, set to the backend listed (enum lzchan_backend)
 *
 * The backend is chosen as lzchan_open() chooses it (LZCHAN_BACKEND).
 * dev: the channels named in the caller's IPC namespace, as the module
 * describes them (LZCHAN_IOC_LIST), whatever their mode.  shm: the files
 * lzchan.<name> in /dev/shm (LZCHAN_SHM_DIR overrides); see lzchan_stat()
 * for what such a description holds.  Entries come in no particular order.
 *
 * Returns the number of channels visible (fills min(@n, that) entries;
 * call again with more room if it is larger than @n), or -ENODEV (dev
 * forced but no module), -EACCES (may not open /dev/lzchan), -ENOENT (the
 * shm directory does not exist), -ENOMEM, or another negative errno.
 */
int lzchan_list(struct lzchan_chan_stat *st, unsigned int n, uint32_t *backend);

/*
 * lzchan_stat - describe channel @name without attaching to it.
 *
 * Fills @st as LZCHAN_IOC_LIST does and sets *@backend (if not NULL).
 * On the shm backend the file is read, never mapped, and trusted in
 * nothing: uid, gid and mode are the file's (cuid, cgid: the same);
 * senders counts lanes whose sender process is alive, receiver whether
 * the receiver's process is; sender_attaches sums the lanes' generations;
 * wake_requests and wakeups both count the senders' futex wakes (a 32-bit
 * counter); peer_deaths is 0 (not recorded).  A file that is not a valid
 * channel, or that the caller may not read, is still described (owner,
 * mode, bytes) with slot_size 0 meaning "geometry unknown".
 *
 * Returns 0, or -ENOENT (no such channel: see lzchan_list()), -EINVAL or
 * -ENAMETOOLONG (bad name), and the errors of lzchan_list().
 */
int lzchan_stat(const char *name, struct lzchan_chan_stat *st, uint32_t *backend);

/* One lane as lzchan_stat_lanes() sees it. */
struct lzchan_lane_stat {
	uint32_t state;		/* LZCHAN_LANE_FREE, _ATTACHED or _CLOSED */
	uint32_t gen;		/* senders that attached to this lane so far */
	uint32_t alive;		/* 1: the sender's process holds the lane */
	uint32_t sleepy;	/* 1: the receiver stopped polling the lane */
	uint32_t tail;		/* positions (slots) written by the sender */
	uint32_t head;		/* positions the receiver has published as read */
	uint64_t msgs;		/* messages sent on this lane (by its senders) */
	uint64_t bytes;		/* payload bytes sent */
	uint64_t reserved[2];
};

/*
 * lzchan_stat_lanes - per-lane state of channel @name.
 * Fills min(@n, lanes) entries of @ls and returns the channel's number of
 * lanes (max_senders), or -EOPNOTSUPP on the dev backend (the module
 * shows lanes only to attached processes), -EPROTO (the file is not a
 * valid channel), -EACCES, and the errors of lzchan_stat().
 */
int lzchan_stat_lanes(const char *name, struct lzchan_lane_stat *ls, unsigned int n);

#ifdef __cplusplus
}
#endif

#endif /* LZCHAN_H */
