/* SPDX-License-Identifier: MIT */
/*
 * MDS link: two plain threads making synchronous calls, each through its own lode_rpc.
 * Nothing on the data path waits for them; the workers only read the target and cluster
 * ids the link sets.
 *
 * - The link thread registers and heartbeats, once a second, and with keys fetches the
 *   MDS's target table after each heartbeat (the chain hop check, handlers.c). It does
 *   nothing else, so a heartbeat never waits behind bulk work: the MDS takes a target it
 *   has not heard from for a while for a dead one.
 * - The reclaim thread removes the objects of deleted files (orphans) the MDS lists for
 *   this target, a page at a time. With a declared capacity it also sums the bytes of the
 *   objects (a walk of the store, too slow for the link thread) for the heartbeat. Removing tens of
 * thousands of objects on a busy disk takes minutes; on the link thread, that stopped the
 * heartbeats and made every target look down to the MDS while training jobs were saving
 * checkpoints.
 */
#include "mds_link.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "codec.h"
#include "log.h"
#include "rpc.h"

#define HEARTBEAT_MS	  1000
#define HOPS_EVERY_MS	  20 /* the target table fetched on a worker's word at most this often */
#define HOPS_PER_BEAT	  4  /* and at most this many times between two heartbeats */
#define ORPHAN_EVERY_MS	  5000
#define ORPHAN_ROUNDS_MAX 16 /* pages of orphans removed in one go */
#define RPC_TIMEOUT_MS	  3000

enum link_state { LINK_UNKNOWN, LINK_UP, LINK_DOWN };

struct lode_mds_link {
	pthread_t thread, reclaim_thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* signalled on stop, and when hops are wanted */
	bool stop;	     /* protected by lock */
	bool hops_wanted;    /* protected by lock: a worker refused a hop (lode_oss.hops_wake) */
	char *mds_addr;
	char *advertise;
	char *data_dir;
	uint8_t uuid[16];
	struct lode_objstore *st;
	struct lode_oss *oss;
	uint64_t capacity;	     /* 0: the file system's */
	uint64_t reserve;	     /* as in lode_mds_link_opts */
	bool in_reserve;	     /* the last capacity() found less free than the reserve */
	_Atomic uint64_t bytes_used; /* with a capacity: written by the reclaim thread */
	/* link thread only */
	struct lode_rpc *rpc;
	struct lode_rpc_conn *conn;
	uint64_t client_id;
	uint32_t target_id;
	enum link_state state;
	int last_err;
	/* reclaim thread only */
	struct lode_rpc *reclaim_rpc;
	struct lode_rpc_conn *reclaim_conn;
	struct lode_wire_objid orphans[LODE_OBJLIST_MAX];
	struct lode_wire_objid removed[LODE_OBJLIST_MAX];
};

/* ---- uuid file ---- */

static int parse_uuid(const char *s, size_t len, uint8_t uuid[16])
{
	static const char *hex = "0123456789abcdef";
	size_t pos = 0;

	if (len != 36 && !(len == 37 && s[36] == '\n'))
		return -EINVAL;
	for (unsigned i = 0; i < 16; i++) {
		const char *hi, *lo;

		if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
			if (s[pos] != '-')
				return -EINVAL;
			pos++;
		}
		hi = s[pos] ? strchr(hex, s[pos]) : NULL;
		lo = s[pos + 1] ? strchr(hex, s[pos + 1]) : NULL;
		if (!hi || !lo)
			return -EINVAL;
		uuid[i] = (uint8_t)((hi - hex) << 4 | (lo - hex));
		pos += 2;
	}
	return 0;
}

static void format_uuid(const uint8_t u[16], char *buf)
{
	snprintf(buf, 38, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\n",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

static int create_uuid(int dirfd, uint8_t uuid[16])
{
	char text[38];
	ssize_t n;
	int fd, err = 0;

	if (getrandom(uuid, 16, 0) != 16)
		return -EIO;
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80); /* variant 1 */
	format_uuid(uuid, text);
	/* tmp + fsync + rename: a crash never leaves a torn identity behind */
	fd = openat(dirfd, "oss.uuid.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	n = write(fd, text, 37);
	if (n != 37)
		err = n < 0 ? -errno : -EIO;
	if (!err && fsync(fd) < 0)
		err = -errno;
	close(fd);
	if (!err && renameat(dirfd, "oss.uuid.tmp", dirfd, "oss.uuid") < 0)
		err = -errno;
	if (!err && fsync(dirfd) < 0)
		err = -errno;
	if (err)
		unlinkat(dirfd, "oss.uuid.tmp", 0);
	return err;
}

int lode_oss_uuid_load(const char *data_dir, uint8_t uuid[16])
{
	uint8_t u[16];
	char text[64];
	ssize_t n;
	int dirfd, fd, err;

	dirfd = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = openat(dirfd, "oss.uuid", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno == ENOENT ? create_uuid(dirfd, u) : -errno;
		goto out;
	}
	n = read(fd, text, sizeof(text) - 1);
	err = n < 0 ? -errno : parse_uuid(text, (size_t)n, u);
	close(fd);
out:
	close(dirfd);
	if (!err)
		memcpy(uuid, u, 16);
	return err;
}

/* ---- calls ---- */

/* The data directory's file system: its size, the bytes free to us, and the bytes kept
 * free of them (the reserve, as in the options). Returns 0 or -errno. */
static int fs_space(const struct lode_mds_link *l, uint64_t *total, uint64_t *avail,
		    uint64_t *reserve)
{
	struct statvfs sv;

	if (statvfs(l->data_dir, &sv) < 0)
		return -errno;
	*total = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (l->reserve != LODE_OSS_RESERVE_DEFAULT)
		*reserve = l->reserve;
	else if (*total / 100 < LODE_OSS_RESERVE_MAX_DEFAULT)
		*reserve = *total / 100;
	else
		*reserve = LODE_OSS_RESERVE_MAX_DEFAULT;
	return 0;
}

/* The size and free bytes this target reports: its file system's, less the reserve from
 * what is free (the size stays, so the reserve reads as used), and with a declared
 * capacity at most what is left of it. */
static void capacity(struct lode_mds_link *l, uint64_t *total, uint64_t *free_bytes)
{
	uint64_t reserve;

	if (fs_space(l, total, free_bytes, &reserve)) {
		*total = *free_bytes = 0;
		return;
	}
	if ((*free_bytes <= reserve) != l->in_reserve) {
		l->in_reserve = *free_bytes <= reserve;
		if (l->in_reserve)
			LODE_WARN("%s has %llu MiB free, within the reserve of %llu MiB: the MDS "
				  "places no new file or copy here (lode-oss --reserve)",
				  l->data_dir, (unsigned long long)(*free_bytes >> 20),
				  (unsigned long long)(reserve >> 20));
		else
			LODE_INFO("%s has %llu MiB free again, above the reserve", l->data_dir,
				  (unsigned long long)(*free_bytes >> 20));
	}
	*free_bytes = *free_bytes > reserve ? *free_bytes - reserve : 0;
	if (l->capacity) {
		uint64_t used = atomic_load(&l->bytes_used);
		uint64_t left = used < l->capacity ? l->capacity - used : 0;

		if (l->capacity < *total)
			*total = l->capacity;
		if (left < *free_bytes)
			*free_bytes = left;
	}
}

static void log_reserve(struct lode_mds_link *l)
{
	uint64_t total, avail, reserve;

	if (fs_space(l, &total, &avail, &reserve))
		return;
	LODE_INFO("keeping %llu MiB of the file system's %llu MiB free (--reserve): less free "
		  "than that, the MDS places nothing new here",
		  (unsigned long long)(reserve >> 20), (unsigned long long)(total >> 20));
}

/* With a declared capacity: what the objects occupy now. */
static void measure_used(struct lode_mds_link *l)
{
	uint64_t used;
	int err;

	if (!l->capacity)
		return;
	err = lode_objstore_bytes_used(l->st, &used);
	if (err)
		LODE_WARN("summing the objects' bytes: %s", strerror(-err));
	else
		atomic_store(&l->bytes_used, used);
}

static int do_register(struct lode_mds_link *l)
{
	struct lode_wire_hello_req hreq = {.client_id = l->client_id, .role = LODE_ROLE_OSS};
	struct lode_wire_target_register_req rreq = {0};
	struct lode_wire_hello_rep rep;
	uint64_t body[(sizeof(rreq) + LODE_ADDR_MAX + 7) / 8];
	struct lode_buf b;
	int err;

	err = lode_rpc_simple(l->conn, LODE_OP_HELLO, &hreq, sizeof(hreq), &rep, sizeof(rep));
	if (err)
		return err;
	memcpy(rreq.uuid, l->uuid, 16);
	capacity(l, &rreq.bytes_total, &rreq.bytes_free);
	rreq.addr_len = (uint16_t)strlen(l->advertise);
	lode_buf_init(&b, body, sizeof(body));
	lode_buf_put(&b, &rreq, sizeof(rreq));
	lode_buf_put(&b, l->advertise, rreq.addr_len);
	if (b.err)
		return b.err;
	memset(&rep, 0, sizeof(rep));
	err = lode_rpc_simple(l->conn, LODE_OP_TARGET_REGISTER, body, (uint32_t)b.len, &rep,
			      sizeof(rep));
	if (err)
		return err;
	l->target_id = rep.target_id;
	atomic_store(&l->oss->cluster_id, rep.cluster_id);
	atomic_store(&l->oss->target_id, rep.target_id);
	return 0;
}

static int do_heartbeat(struct lode_mds_link *l)
{
	struct lode_wire_target_heartbeat_req req = {.target_id = l->target_id};

	capacity(l, &req.bytes_total, &req.bytes_free);
	req.objects = lode_objstore_count(l->st);
	return lode_rpc_simple(l->conn, LODE_OP_TARGET_HEARTBEAT, &req, sizeof(req), NULL, 0);
}

/* Fetches the MDS's target table for the chain hop check (lode_oss_hops_set). */
static int fetch_hops(struct lode_mds_link *l)
{
	size_t cap = LODE_TARGETS_MAX * (sizeof(struct lode_wire_target) + LODE_ADDR_MAX + 8);
	struct lode_wire_target_list_rep rep = {0};
	struct lode_oss_hop *hops;
	struct lode_call call = {
	    .opcode = LODE_OP_TARGET_LIST,
	    .reply_body = &rep,
	    .reply_body_max = sizeof(rep),
	};
	const struct lode_wire_target *t;
	struct lode_name addr;
	uint64_t pos = 0;
	unsigned n = 0;
	char *data;
	int rc;

	/* this fetch answers every refusal so far (want_hops wakes us again after one more) */
	pthread_mutex_lock(&l->lock);
	l->hops_wanted = false;
	pthread_mutex_unlock(&l->lock);
	data = malloc(cap);
	hops = calloc(LODE_TARGETS_MAX, sizeof(*hops));
	if (!data || !hops) {
		rc = -ENOMEM;
		goto out;
	}
	call.reply_data = data;
	call.reply_data_max = cap;
	rc = lode_rpc_call(l->conn, &call);
	if (!rc && lode_target_list_check(data, call.reply_data_len, rep.count))
		rc = -EPROTO; /* never half a list */
	if (rc)
		goto out;
	while (n < LODE_TARGETS_MAX &&
	       (rc = lode_target_next(data, call.reply_data_len, &pos, &t, &addr)) == 1) {
		if (addr.len > LODE_ADDR_MAX)
			continue;
		hops[n].id = t->target_id;
		memcpy(hops[n].addr, addr.ptr, addr.len);
		hops[n].addr[addr.len] = 0;
		n++;
	}
	if (rc >= 0) {
		lode_oss_hops_set(l->oss, hops, n);
		rc = 0;
	}
out:
	free(data);
	free(hops);
	return rc;
}

/* One page of orphans: removes them and reports what was removed. Returns the number
 * listed (>= 0) or -errno. */
static int orphan_round(struct lode_mds_link *l, uint32_t target_id)
{
	struct lode_wire_orphan_req req = {.target_id = target_id, .max = LODE_OBJLIST_MAX};
	struct lode_wire_orphan_list_rep rep = {0};
	struct lode_call call = {
	    .opcode = LODE_OP_ORPHAN_LIST,
	    .body = &req,
	    .body_len = sizeof(req),
	    .reply_body = &rep,
	    .reply_body_max = sizeof(rep),
	    .reply_data = l->orphans,
	    .reply_data_max = sizeof(l->orphans),
	};
	struct iovec iov;
	uint32_t nremoved = 0;
	int err;

	err = lode_rpc_call(l->reclaim_conn, &call);
	if (err)
		return err;
	if (call.reply_body_len != sizeof(rep) || rep.count > LODE_OBJLIST_MAX ||
	    call.reply_data_len != (uint64_t)rep.count * sizeof(struct lode_wire_objid))
		return -EPROTO;
	for (uint32_t i = 0; i < rep.count; i++) {
		struct lode_wire_objid *id = &l->orphans[i];

		if (!id->ino || id->reserved)
			continue; /* not an object id: never report it removed */
		err = lode_objstore_remove(l->st, NULL, id, NULL);
		if (err) {
			LODE_WARN("removing orphan %llx.%llx.%u: %s", (unsigned long long)id->ino,
				  (unsigned long long)id->generation, id->stripe, strerror(-err));
			continue;
		}
		l->removed[nremoved++] = *id;
	}
	if (!nremoved)
		return (int)rep.count;
	req.max = nremoved;
	iov.iov_base = l->removed;
	iov.iov_len = (size_t)nremoved * sizeof(struct lode_wire_objid);
	memset(&call, 0, sizeof(call));
	call.opcode = LODE_OP_ORPHAN_DONE;
	call.body = &req;
	call.body_len = sizeof(req);
	call.data = &iov;
	call.data_iovcnt = 1;
	err = lode_rpc_call(l->reclaim_conn, &call);
	if (err)
		return err;
	LODE_INFO("removed %u orphan objects", nremoved);
	return (int)rep.count;
}

/* ---- thread ---- */

static void set_state(struct lode_mds_link *l, enum link_state s, int err)
{
	if (s == l->state)
		return;
	if (s == LINK_UP)
		LODE_INFO("registered with MDS %s as target %u (clients use %s)", l->mds_addr,
			  l->target_id, l->advertise);
	else
		LODE_WARN("MDS %s: %s; serving data, retrying", l->mds_addr,
			  err == -EACCES ? "it refused this OSS's key (or does not hold it)"
					 : strerror(-err));
	l->state = s;
	l->last_err = err;
}

static bool stopping(struct lode_mds_link *l)
{
	bool s;

	pthread_mutex_lock(&l->lock);
	s = l->stop;
	pthread_mutex_unlock(&l->lock);
	return s;
}

/* Sleeps until `ms` from now or until stop, or with hops non-NULL, until a worker wants
 * the target table (*hops then true: the fetch that answers clears the wish, fetch_hops);
 * returns true when stopping. */
static bool wait_ms_or_hops(struct lode_mds_link *l, unsigned ms, bool *hops)
{
	struct timespec ts;
	bool s;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&l->lock);
	while (!l->stop && !(hops && l->hops_wanted) &&
	       pthread_cond_timedwait(&l->cond, &l->lock, &ts) != ETIMEDOUT)
		;
	s = l->stop;
	if (hops)
		*hops = l->hops_wanted;
	pthread_mutex_unlock(&l->lock);
	return s;
}

static bool wait_ms(struct lode_mds_link *l, unsigned ms)
{
	return wait_ms_or_hops(l, ms, NULL);
}

/* lode_oss.hops_wake: called by a worker (under the OSS's hops_wake_lock). Wakes the link
 * thread only when the flag was clear: a client naming hops the MDS does not list, request
 * after request, wakes it once a fetch at most. */
static void want_hops(void *arg)
{
	struct lode_mds_link *l = arg;

	pthread_mutex_lock(&l->lock);
	if (!l->hops_wanted) {
		l->hops_wanted = true;
		pthread_cond_broadcast(&l->cond);
	}
	pthread_mutex_unlock(&l->lock);
}

/* Sleeps until the next heartbeat is due; meanwhile fetches the target table whenever a
 * worker refused a hop, at most every HOPS_EVERY_MS and HOPS_PER_BEAT times (a client
 * resends a refused chained write a moment later: a target that just joined is then known;
 * a hop that stays unknown costs the MDS a few fetches a second, not one per request).
 * Returns true when stopping. */
static bool wait_heartbeat(struct lode_mds_link *l, bool registered)
{
	uint64_t due = lode_now_ms() + HEARTBEAT_MS, now;
	unsigned fetches = 0;
	bool hops;

	while ((now = lode_now_ms()) < due) {
		bool may = registered && fetches < HOPS_PER_BEAT;

		if (wait_ms_or_hops(l, (unsigned)(due - now), may ? &hops : NULL))
			return true;
		if (!may || !hops)
			continue;
		fetch_hops(l);
		fetches++;
		atomic_fetch_add_explicit(&l->oss->hops_refetched, 1, memory_order_relaxed);
		now = lode_now_ms();
		if (now < due &&
		    wait_ms(l, (unsigned)(due - now < HOPS_EVERY_MS ? due - now : HOPS_EVERY_MS)))
			return true;
	}
	return false;
}

static void *link_main(void *arg)
{
	struct lode_mds_link *l = arg;
	bool registered = false;
	int err;

	do {
		if (!registered) {
			err = do_register(l);
			if (err) {
				set_state(l, LINK_DOWN, err);
				continue;
			}
			registered = true;
			set_state(l, LINK_UP, 0);
			if (l->oss->hops_checked)
				fetch_hops(l);
			continue;
		}
		err = do_heartbeat(l);
		if (err == -ENOENT) {
			/* The MDS lost track of us (e.g. it was rebuilt): register again now. */
			LODE_INFO("MDS does not know target %u; registering again", l->target_id);
			registered = false;
			l->state = LINK_UNKNOWN;
			continue;
		}
		if (err) {
			registered = false;
			set_state(l, LINK_DOWN, err);
			continue;
		}
		/* the chain hop check's table: every heartbeat, so that a new target is known
		 * within a second (a hop not yet known is only sent by the client instead) */
		if (l->oss->hops_checked) {
			err = fetch_hops(l);
			if (err)
				LODE_DEBUG("target list from MDS %s: %s", l->mds_addr,
					   strerror(-err));
		}
	} while (!wait_heartbeat(l, registered && l->oss->hops_checked));
	return NULL;
}

/* Every ORPHAN_EVERY_MS once the target has an id: up to ORPHAN_ROUNDS_MAX pages. */
static void *reclaim_main(void *arg)
{
	struct lode_mds_link *l = arg;
	int err = 0;

	while (!wait_ms(l, ORPHAN_EVERY_MS)) {
		uint32_t target_id = atomic_load(&l->oss->target_id);

		measure_used(l);
		if (!target_id)
			continue; /* not registered yet */
		for (unsigned i = 0; i < ORPHAN_ROUNDS_MAX && !stopping(l); i++) {
			err = orphan_round(l, target_id);
			if (err < LODE_OBJLIST_MAX)
				break;
		}
		if (err < 0)
			LODE_WARN("orphan cleanup: %s", strerror(-err));
	}
	return NULL;
}

int lode_mds_link_start(struct lode_mds_link **out, const struct lode_mds_link_opts *opts)
{
	struct lode_mds_link *l;
	pthread_condattr_t ca;
	int err;

	if (strlen(opts->advertise) > LODE_ADDR_MAX)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->mds_addr = strdup(opts->mds_addr);
	l->advertise = strdup(opts->advertise);
	l->data_dir = strdup(opts->data_dir);
	if (!l->mds_addr || !l->advertise || !l->data_dir) {
		err = -ENOMEM;
		goto err_free;
	}
	memcpy(l->uuid, opts->uuid, 16);
	l->st = opts->st;
	l->oss = opts->oss;
	l->capacity = opts->capacity;
	l->reserve = opts->reserve;
	log_reserve(l);
	measure_used(l); /* before the first register reports it */
	if (getrandom(&l->client_id, sizeof(l->client_id), 0) != sizeof(l->client_id))
		l->client_id = (uint64_t)lode_now_ns() ^ (uint64_t)getpid();
	err = lode_rpc_create(&l->rpc, RPC_TIMEOUT_MS);
	if (err)
		goto err_free;
	err = lode_rpc_set_auth(l->rpc, l->oss->keys, LODE_ROLE_OSS);
	if (err)
		goto err_rpc;
	err = lode_rpc_conn_open(l->rpc, l->mds_addr, &l->conn);
	if (err)
		goto err_rpc;
	err = lode_rpc_create(&l->reclaim_rpc, RPC_TIMEOUT_MS);
	if (err)
		goto err_rpc;
	err = lode_rpc_set_auth(l->reclaim_rpc, l->oss->keys, LODE_ROLE_OSS);
	if (err)
		goto err_reclaim_rpc;
	err = lode_rpc_conn_open(l->reclaim_rpc, l->mds_addr, &l->reclaim_conn);
	if (err)
		goto err_reclaim_rpc;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&l->thread, NULL, link_main, l);
	if (err)
		goto err_sync;
	err = -pthread_create(&l->reclaim_thread, NULL, reclaim_main, l);
	if (err)
		goto err_link_thread;
	lode_oss_hops_wake_set(l->oss, want_hops, l);
	*out = l;
	return 0;

err_link_thread:
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
err_sync:
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
err_reclaim_rpc:
	lode_rpc_destroy(l->reclaim_rpc);
err_rpc:
	lode_rpc_destroy(l->rpc); /* closes the connection too */
err_free:
	free(l->mds_addr);
	free(l->advertise);
	free(l->data_dir);
	free(l);
	return err;
}

void lode_mds_link_stop(struct lode_mds_link *l)
{
	if (!l)
		return;
	lode_oss_hops_wake_set(l->oss, NULL, NULL); /* no worker calls want_hops after this */
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	pthread_join(l->reclaim_thread, NULL);
	lode_rpc_destroy(l->reclaim_rpc);
	lode_rpc_destroy(l->rpc);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l->mds_addr);
	free(l->advertise);
	free(l->data_dir);
	free(l);
}
