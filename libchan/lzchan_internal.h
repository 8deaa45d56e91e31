/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * liblzchan internals.  The memory-ordering argument for every atomic
 * access below is in Documentation/libchan/design.rst; each access names the
 * access it pairs with.
 */
#ifndef LZCHAN_INTERNAL_H
#define LZCHAN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The library compiles the out-of-line versions of the inline calls. */
#define __LZCHAN_LIBRARY 1
#include "lzchan.h"


/* Relaxed, acquire and release accesses to shared words. */
#define __lz_load(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define __lz_load_acq(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define __lz_store(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define __lz_store_rel(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Receiver's private view of a lane. */
enum {
	__LZ_RL_IDLE,		/* nobody attached: sleepy, the bell wakes it */
	__LZ_RL_ACTIVE,		/* polled on every receive-any */
	__LZ_RL_SLEEPY,		/* attached but quiet: the bell wakes it */
	__LZ_RL_DONE,		/* end of stream delivered for gen */
	__LZ_RL_BROKEN,		/* held garbage (-EBADMSG reported); abandoned
				 * until its sender has gone, then ended */
};

/* What the receiver doubts about a lane's sender (lzchan_ring.c). */
struct __lzchan_rxwatch {
	uint64_t closed_held_ns;	/* shm: CLOSED said, lock found held */
	uint64_t held_departures;	/* hdr->departures before that look */
	uint32_t hup_looks;		/* shm: looks owed at its lock after its
					 * connection hung up (__lzchan_shm_hup_look) */
	int end_cause;			/* LZCHAN_END_* of the last end reported */
	uint64_t stall_ns;		/* 0, or since when the sender claims more
					 * than is ready at stall_pos */
	uint32_t stall_pos;
};

/* A guarded mapping (lzchan_guard.c): a shm channel file's, or the range
 * a dev handle maps its areas in. */
struct __lzchan_guard {
	uint32_t seq;			/* odd while the entry changes */
	int lost;			/* the SIGBUS handler replaced it */
	uintptr_t start;		/* 0: unused */
	size_t len;
	size_t hdr_off;			/* its struct lzchan_shm_hdr, or SIZE_MAX */
	struct __lzchan_guard *next;
	uint32_t *poison;		/* set to poison_val on a cut */
	uint32_t poison_val;
	uint32_t *cut;			/* the handle's f.cut: set to 1 on a cut */
};

struct __lzchan_guard *__lzchan_guard_add(void *start, size_t len, size_t hdr_off);
bool __lzchan_guard_lost(const struct __lzchan_guard *g);
void __lzchan_guard_retire(struct __lzchan_guard *g);
void __lzchan_guard_poison(struct __lzchan_guard *g, uint32_t *word, uint32_t val);
void __lzchan_guard_cut_word(struct __lzchan_guard *g, uint32_t *word);
struct lzchan;
int __lzchan_guard_handle(struct lzchan *ch, size_t hdr_off);
int __lzchan_dev_reserve(struct lzchan *ch, uint64_t bytes, size_t hdr_off);
void *__lzchan_dev_map(struct lzchan *ch, uint64_t off, uint64_t len, int prot);

struct lzchan {
	struct __lzchan_fast f;		/* first: what lzchan_fast.h's inline paths use */
	uint32_t max_msg;
	enum lzchan_backend backend;
	int fd;				/* device fd (or endpoint) or shm file */
	struct __lzchan_guard *guard;	/* our mapping's SIGBUS guard */
	int lost_err;			/* what a call says once the guard lost
					 * the mapping: -EIO on shm (the file was
					 * cut short), -EPIPE on dev (the only
					 * SIGBUS there: our endpoint revoked,
					 * which ends us as a departed peer) */
	int32_t numa_node;
	uint32_t lane;			/* sender's lane */
	uint32_t lane_gen;		/* sender: our lane's generation */
	bool created;			/* lzchan_open() created the channel */
	bool temp;			/* shm: a temporary channel (LZCHAN_TEMP) */
	bool claimed;			/* shm: we hold our role's lock (the close
					 * speaks for the role only then) */
	uint64_t file_dev, file_ino;	/* shm: the channel file */
	struct __lzchan_ps *ps;		/* a pub/sub handle's state (lzchan_pubsub.c) */
	bool bye_known;			/* clean closes are recorded (shm; a
					 * module with LZCHAN_FEAT_BYE) */
	char name[LZCHAN_NAME_SIZE];

	/* the areas, as mapped */
	struct lzchan_shm_lane *lane_info;	/* info: per-lane status */
	char *rx_lanes;				/* rx: per-lane lines */
	uint64_t *bell;
	uint32_t *wake_word;		/* shm: senders' wake counter (bell area) */
	struct lzchan_layout layout;
	void *map_base;			/* shm: the whole file; dev: the range
					 * reserved for the channel's areas, each
					 * mapped at its offset in it
					 * (__lzchan_dev_reserve()) */
	size_t map_len;

	/* sender */
	uint32_t stat_tail;		/* f.tail when f.stat_msgs last counted: the
					 * positions since are inline messages */
	int never_lost;			/* 0: what f.lost points at without a guard */
	uint8_t *cont;			/* bit per slot: word 0 holds payload */
	uint32_t cont_count;		/* bits set in cont (f.cont_any: nonzero) */
	uint64_t last_rx_look_ns;	/* shm: last look at the receiver's lock */
	uint64_t gone_held_ns;		/* shm: GONE said, receiver's lock found held */
	bool rx_seen;			/* shm: a status other than NONE was seen,
					 * or our lane given up: NONE is then a lie
					 * (anyone may write it) */
	bool rx_dead;			/* shm: the receiver's lock was found free
					 * under status rx_dead_st ... */
	uint64_t rx_dead_st;		/* ... and stays "dead" while it reads so */

	/* receiver */
	struct __lzchan_rxlane no_turn;	/* f.cur when it is nobody's turn */
	uint32_t turn_peek;		/* f.cur's peek when its span was granted */
	uint32_t grant_quiet;		/* f.quiet as granted (less what was
					 * taken back) */
	uint32_t turns;			/* turns since the last general look */
	bool look_due;			/* the next call looks in full, first */
	uint32_t quiet_left;		/* quick empty verdicts before a general look */
	uint32_t quiet_spent;		/* quick empty verdicts since the last one */
	uint64_t *bell_seen;
	struct __lzchan_rxwatch *watch;	/* per lane: doubts about its sender */
	uint32_t bell_words;
	uint32_t parked;		/* our copy of rx->parked */
	uint32_t wake_seen;		/* shm: wake_word before the last look */
	bool have_membarrier;
	bool attn_known;		/* sender: attn_seen is what we saw */
	uint32_t activations;		/* lanes made active so far */
	uint32_t spin_ns;
	int evfd;			/* dev: eventfd the kernel signals */
	uint64_t last_liveness_ns;	/* shm: last check of senders' locks */
	uint32_t liveness_next;		/* shm: lane whose lock is looked at next */
	uint32_t sleepy_after;		/* empty polls before a lane sleeps */
	uint32_t scans;			/* empty receive-anys since a scan */
	bool broken_over;		/* a broken lane's sender has gone: its
					 * end is owed (__lz_rx_broken_any()) */
	uint64_t departures_seen;	/* hdr->departures at our last look */
	bool departed;			/* ends may be owed: __lz_rx_departed() */
	uint32_t looks;			/* general looks since a departure sweep */

	/* either role */
	uint32_t wake_req;		/* lzchan_wake() called, not yet seen */

	/* shm doorbell socket (lzchan_sock.c) */
	int lsock;			/* receiver: listening, or -1 */
	bool sock_bound;		/* receiver: its name is ours to remove */
	int *conn;			/* receiver: per lane, the sender's, or -1 */
	uint32_t *conn_gen;		/* receiver: per lane, its generation */
	struct ucred *cred;		/* receiver: per lane, from SO_PEERCRED */
	int hupfd;			/* receiver: timerfd in the set, for the
					 * looks owed after a hang-up (shm) */
	int wakefd;			/* receiver: eventfd in the set, for
					 * lzchan_wake(), or -1 */
	int closefd;			/* receiver: inotify in the set, for a
					 * writer's close of the channel file
					 * (a sender's death, a cut, a ring of
					 * last resort), or -1 */
	int spare;			/* receiver: a descriptor held back, to
					 * refuse a connection with when the
					 * process has no other (EMFILE), or -1 */
	bool sweep_again;		/* receiver: look at the locks once more
					 * when hupfd fires (after a close) */
	uint64_t swept_ns;		/* receiver: the last such look */
#define LZCHAN_SOCK_PENDING	16
	int pending[LZCHAN_SOCK_PENDING];	/* accepted, no hello yet */
	uint64_t pending_ns[LZCHAN_SOCK_PENDING];	/* when accepted */
	uint32_t npending;
	uint64_t sock_serviced_ns;	/* receiver: last __lzchan_sock_service() */
	int sock;			/* sender: connected to the receiver, or -1 */
	uint64_t sock_tried_ns;		/* sender: last failed connect */
	struct ucred rx_cred;		/* sender: the receiver, from SO_PEERCRED */
};

/*
 * The shm backend's file: a header page, then the channel areas laid out
 * as the module lays them out.  Ownership is kept with open-file-description
 * locks far past the end of the file: the receiver holds byte LOCK_BASE,
 * the sender of lane i byte LOCK_BASE + 1 + i.
 */
#define LOCK_BASE		(1LL << 40)
#define SHM_FILE_MAGIC		0x6c7a6366U	/* "lzcf" */
#define SHM_FILE_VERSION	3	/* 2: attn kept (LZCHAN_ABI_VERSION 2);
					 * 3: a page a lane's rx words, with
					 * the park word's copy (ABI 4) */
#define SHM_PS_FILE_VERSION	2	/* a pub/sub file's: ABI 4 changed
					 * nothing there */

struct __lzchan_shm_file {
	uint32_t magic;		/* stored last, with release order */
	uint32_t version;
	uint32_t page_size;
	uint32_t slot_size;
	uint32_t slot_count;
	uint32_t max_senders;
	int32_t numa_node;
	uint32_t flags;		/* SHM_FILE_* */
	struct lzchan_layout layout;
	/* SHM_FILE_PUBSUB (max_senders 0, layout zero: a library that
	 * knows no pub/sub refuses the file as no channel, -EPROTO) */
	uint32_t max_subscribers;
	uint32_t policy;	/* LZCHAN_PS_* */
	uint32_t stall_ms;
	uint32_t pad;
	struct lzchan_ps_layout ps;
};

#define SHM_FILE_TEMP		(1U << 0)	/* the name goes with the receiver */
#define SHM_FILE_PUBSUB		(1U << 1)	/* a publish/subscribe channel */

/*
 * The library's floors (Documentation/libchan/design.rst, "The library's
 * floors"), bottom up.  A file calls only into floors below its own, and
 * selftests/lzchan_floors.sh checks that no file calls up or in a circle.
 */

/* Floor 0, lzchan_guard.c: the SIGBUS guard (declared above). */

/* Floor 0, lzchan_sys.c: the clock and the memory barriers. */
uint64_t __lzchan_now_ns(void);
int __lzchan_heavy_barrier(struct lzchan *ch);
bool __lzchan_register_sender_barrier(void);
bool __lzchan_query_barrier(void);

/* Floor 0, lzchan_file.c: names, geometry, the backend, the shm file. */
int __lzchan_name_check(const char *name);
int __lzchan_geom_check(uint32_t slot_size, uint32_t slot_count, uint32_t max_senders);
uint32_t __lzchan_max_msg(uint32_t slot_size, uint32_t slot_count);
/* The device fd to use, -ENOENT meaning "use shm", or another -errno. */
int __lzchan_pick(void);
int __lzchan_shm_path(char *buf, size_t len, const char *name);
void __lzchan_shm_layout(struct lzchan_layout *l, uint32_t slot_size,
			 uint32_t slot_count, uint32_t max_senders, uint64_t page);
int __lzchan_lock(int fd, int64_t byte);
int __lzchan_unlock(int fd, int64_t byte);
/* 1 if another open file description holds @byte, 0 if none, -errno. */
int __lzchan_locked(int fd, int64_t byte);
int __lzchan_shm_lane_alive(struct lzchan *ch, uint32_t lane);
int __lzchan_shm_rx_alive(struct lzchan *ch);
bool __lzchan_shm_lane_look(struct lzchan *ch, uint32_t lane);
bool __lzchan_shm_hup_look(struct lzchan *ch, uint32_t lane);

/* Floor 1, lzchan_sock.c: the shm doorbell socket. */
int __lzchan_sock_listen(struct lzchan *ch);
void __lzchan_sock_armed(struct lzchan *ch);
void __lzchan_sock_touch(struct lzchan *ch);
void __lzchan_sock_close(struct lzchan *ch);
struct stat;
void __lzchan_sock_unlink(const char *path, const struct stat *st);
void __lzchan_sock_service(struct lzchan *ch);
int __lzchan_sock_peer(struct lzchan *ch, uint32_t lane, struct ucred *out);
int __lzchan_sock_connect(struct lzchan *ch);
int __lzchan_sock_ring(struct lzchan *ch);

/* Floor 2, lzchan_wake.c: a sender's bell and wake. */
void __lzchan_wake(struct lzchan *ch, uint32_t parked);
void __lzchan_ring(struct lzchan *ch);

/* Floor 2, lzchan_pubsub.c: publish/subscribe handles, which the public
 * calls above hand here. */
int __lzchan_ps_geom_check(uint32_t slot_size, uint32_t slot_count, uint32_t max_subs,
			   uint32_t policy);
uint32_t __lzchan_ps_max_msg(uint32_t slot_size);
void __lzchan_ps_layout(struct lzchan_ps_layout *l, uint32_t slot_size, uint32_t slot_count,
			uint32_t max_subs, uint64_t page);
uint64_t __lzchan_ps_file_size(const struct lzchan_ps_layout *l, uint64_t page);
int __lzchan_ps_attach(struct lzchan *ch, const struct __lzchan_shm_file *hdr, uint64_t size,
		       uint32_t history);
int __lzchan_ps_attach_dev(struct lzchan *ch, const struct lzchan_info *in, uint32_t history);
void __lzchan_ps_close(struct lzchan *ch, bool clean);
int __lzchan_ps_send(struct lzchan *ch, const void *buf, size_t len);
int __lzchan_ps_reserve(struct lzchan *ch, size_t len, void **buf);
int __lzchan_ps_commit(struct lzchan *ch, size_t len);
int __lzchan_ps_flush(struct lzchan *ch, int64_t timeout_ns);
int __lzchan_ps_recv(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane);
int __lzchan_ps_recv_batch(struct lzchan *ch, struct lzchan_msg *m, unsigned int n);
int __lzchan_ps_peek(struct lzchan *ch, struct lzchan_msg *m);
void __lzchan_ps_release(struct lzchan *ch, const struct lzchan_msg *m);
int __lzchan_ps_release_check(struct lzchan *ch, const struct lzchan_msg *m);
int __lzchan_ps_lost(struct lzchan *ch, uint64_t *lost);
int __lzchan_ps_end_cause(struct lzchan *ch, uint32_t lane);
int __lzchan_ps_recv_wait(struct lzchan *ch, void *buf, size_t cap, uint32_t *lane,
			  int64_t timeout_ns);
void __lzchan_ps_kick(struct lzchan *ch);
int __lzchan_ps_event_fd(struct lzchan *ch);
int __lzchan_ps_arm(struct lzchan *ch);
int __lzchan_ps_describe(int fd, const struct __lzchan_shm_file *h, uint64_t size,
			 struct lzchan_chan_stat *out, struct lzchan_sub_stat *ss, unsigned int n);

/* Floor 3, lzchan_ring.c: send and receive.  __lzchan_tx_gate() keeps the
 * inline send's gate (struct __lzchan_fast) whenever what it summarises
 * changes. */
void __lzchan_tx_gate(struct lzchan *ch);
void __lzchan_tx_init(struct lzchan *ch);
void __lzchan_rx_attn_active(struct lzchan *ch);
void __lzchan_rx_attn_all(struct lzchan *ch);
void __lzchan_rx_unpark_copies(struct lzchan *ch);
void __lzchan_rx_init_lanes(struct lzchan *ch);
void __lzchan_rx_quiet_revoke(struct lzchan *ch);
void __lzchan_rx_disarm(struct lzchan *ch, bool drain);
uint64_t __lzchan_rx_verdict_due(const struct lzchan *ch, uint64_t now);
void __lzchan_rx_publish_all(struct lzchan *ch);
bool __lzchan_rx_pending(struct lzchan *ch);
void __lzchan_scrub_lane(char *slots, uint32_t slot_count, uint32_t slot_size);

/* The top floors hold the public API only (declared in lzchan.h): floor 4,
 * lzchan_stat.c (channels seen without opening them) and
 * lzchan_endpoint.c (endpoints granted, revoked, passed and received, and
 * who is on each lane); floor 5,
 * lzchan_setup.c (opening and closing, both backends); floor 6,
 * lzchan_wait.c (waiting). */

/* The handle's role as LZCHAN_IOC_OPEN names it, and back (0: none). */
static inline uint32_t __lzchan_open_flag(uint32_t role)
{
	return role == LZCHAN_RECEIVER ? LZCHAN_OPEN_RECEIVER :
	       role == LZCHAN_SENDER ? LZCHAN_OPEN_SENDER :
	       role == LZCHAN_PUBLISHER ? LZCHAN_OPEN_PUBLISHER :
	       role == LZCHAN_SUBSCRIBER ? LZCHAN_OPEN_SUBSCRIBER : 0;
}

static inline uint32_t __lzchan_role_of(uint32_t open_flag)
{
	return open_flag == LZCHAN_OPEN_RECEIVER ? LZCHAN_RECEIVER :
	       open_flag == LZCHAN_OPEN_SENDER ? LZCHAN_SENDER :
	       open_flag == LZCHAN_OPEN_PUBLISHER ? LZCHAN_PUBLISHER :
	       open_flag == LZCHAN_OPEN_SUBSCRIBER ? LZCHAN_SUBSCRIBER : 0;
}

/* A module's errno @e on a bound fd as the library says it: a revoked
 * endpoint (EKEYREVOKED) is a departed peer's end, -EPIPE. */
static inline int __lzchan_dev_err(int e)
{
	return e == EKEYREVOKED ? -EPIPE : -e;
}

/* A spinning loop's pause. */
static inline void __lz_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Was lzchan_wake() called since we last looked?  Takes the request. */
static inline bool __lzchan_woken(struct lzchan *ch)
{
	/* Relaxed test first (the common case: no request), then an acquire
	 * exchange, pairing with the release store in lzchan_wake(). */
	return __lzchan_unlikely(__lz_load(&ch->wake_req)) &&
	       __atomic_exchange_n(&ch->wake_req, 0, __ATOMIC_ACQUIRE);
}

/* Lane @i's rx words (shm; a receiver's handle).  A dev sender has only
 * its own, mapped alone (f.my_rxl). */
static inline struct lzchan_shm_rx_lane *__lzchan_rxl(const struct lzchan *ch, uint32_t i)
{
	return (struct lzchan_shm_rx_lane *)(ch->rx_lanes + (size_t)i * ch->layout.rx_lane_stride);
}

static inline struct lzchan_slot_hdr *__lzchan_slot(const struct lzchan *ch,
						    const char *slots, uint32_t pos)
{
	return (struct lzchan_slot_hdr *)(slots + ((size_t)(pos & ch->f.mask) << ch->f.slot_shift));
}

#endif /* LZCHAN_INTERNAL_H */
