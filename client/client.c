/* SPDX-License-Identifier: MIT */
/* liblode: connecting to a cluster, credentials, the target table and MDS calls. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "auth.h"
#include "client.h"
#include "codec.h"
#include "config.h"
#include "rdma_regcache.h"

static __thread int tls_creds_set;
static __thread uint32_t tls_uid, tls_gid;
static __thread unsigned tls_ngroups;
static __thread uint32_t tls_groups[LODE_CRED_GROUPS_MAX];

const char *lode_version(void)
{
	return LODE_VERSION;
}

static uint64_t creds_pack(uint32_t uid, uint32_t gid)
{
	return (uint64_t)uid << 32 | gid;
}

/* The process's supplementary groups, the first LODE_CRED_GROUPS_MAX of them. */
static void process_groups(struct lode_client *c)
{
	int n = getgroups(0, NULL);
	gid_t *all;

	if (n <= 0)
		return;
	all = calloc((size_t)n, sizeof(*all));
	if (!all)
		return;
	n = getgroups(n, all);
	for (int i = 0; i < n && c->ngroups < LODE_CRED_GROUPS_MAX; i++)
		c->groups[c->ngroups++] = (uint32_t)all[i];
	free(all);
	atomic_store_explicit(&c->proc_groups, 1, memory_order_relaxed);
}

void lode_client_set_creds(struct lode_client *c, uint32_t uid, uint32_t gid)
{
	atomic_store_explicit(&c->creds, creds_pack(uid, gid), memory_order_relaxed);
	atomic_store_explicit(&c->proc_groups, 0, memory_order_relaxed);
}

void lode_thread_creds_set(uint32_t uid, uint32_t gid)
{
	lode_thread_creds_set_groups(uid, gid, 0, NULL);
}

void lode_thread_creds_set_groups(uint32_t uid, uint32_t gid, unsigned ngroups,
				  const uint32_t *groups)
{
	tls_creds_set = 1;
	tls_uid = uid;
	tls_gid = gid;
	if (ngroups > LODE_CRED_GROUPS_MAX)
		ngroups = LODE_CRED_GROUPS_MAX;
	tls_ngroups = groups ? ngroups : 0;
	if (tls_ngroups)
		memcpy(tls_groups, groups, tls_ngroups * sizeof(*groups));
}

void lode_thread_creds_clear(void)
{
	tls_creds_set = 0;
}

struct lode_wire_cred lode_client_cred(const struct lode_client *c)
{
	uint64_t packed = atomic_load_explicit(&c->creds, memory_order_relaxed);
	struct lode_wire_cred cr = {.uid = (uint32_t)(packed >> 32), .gid = (uint32_t)packed};

	if (tls_creds_set) {
		cr.uid = tls_uid;
		cr.gid = tls_gid;
		cr.ngroups = tls_ngroups;
		memcpy(cr.groups, tls_groups, tls_ngroups * sizeof(cr.groups[0]));
	} else if (atomic_load_explicit(&c->proc_groups, memory_order_relaxed)) {
		cr.ngroups = c->ngroups;
		memcpy(cr.groups, c->groups, c->ngroups * sizeof(cr.groups[0]));
	}
	return cr;
}

void lode_client_attr_to_stat(const struct lode_wire_attr *a, struct lode_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->ino = a->ino;
	st->size = a->size;
	st->blocks = a->blocks;
	st->mode = a->mode;
	st->uid = a->uid;
	st->gid = a->gid;
	st->nlink = a->nlink;
	st->atime_ns = a->atime_ns;
	st->mtime_ns = a->mtime_ns;
	st->ctime_ns = a->ctime_ns;
	st->generation = a->generation;
	st->rdev = a->rdev;
}

static bool retryable(int rc)
{
	return rc == -ECONNRESET || rc == -ECONNREFUSED || rc == -EPIPE || rc == -ECONNABORTED;
}

/* Errors of the transport: the MDS did not answer. */
static bool no_answer(int rc)
{
	return rc == -ETIMEDOUT || rc == -EHOSTUNREACH || rc == -ENETUNREACH || rc == -ESHUTDOWN ||
	       rc == -ENOTCONN;
}

/*
 * How long calls ride over an MDS that refuses connections: an MDS restart (a crash and
 * its service manager starting it again, LMDB reopened) takes about a second. Past this,
 * a refused connection fails the call with the error, and every later call fails at once
 * (one connection attempt) until the MDS answers again: a mount whose MDS is gone answers
 * EIO promptly instead of making every stat wait for the timeout.
 */
#define MDS_RESTART_GRACE_MS 3000

/* A call's directory grant (grant.c): the token sent (LODE_WIRE_F_GRANT), what came back */
struct grant_io {
	uint64_t token;
	bool answered; /* the MDS answered: renewed is its word */
	bool renewed;
	uint64_t new_grant;
};

static int mds_call(struct lode_client *c, uint8_t op, bool lazy, const void *body,
		    uint32_t body_len, const struct iovec *data, int data_iovcnt, void *reply,
		    uint32_t reply_max, void *reply_data, uint64_t reply_data_max,
		    uint64_t *reply_data_len, const struct lode_wire_cap *cap, struct grant_io *g)
{
	uint64_t deadline = lode_now_ms() + c->timeout_ms;
	unsigned backoff = 20;
	int rc;

	for (;;) {
		struct lode_call call = {
		    .opcode = op,
		    .body = body,
		    .body_len = body_len,
		    .data = data,
		    .data_iovcnt = data_iovcnt,
		    .reply_body = reply,
		    .reply_body_max = reply_max,
		    .reply_data = reply_data,
		    .reply_data_max = reply_data_max,
		    .lazy = lazy,
		    .cap = cap,
		    .grant_flag = g != NULL,
		    .grant = g ? g->token : 0,
		};
		uint64_t now, gone, until;

		rc = lode_rpc_call_direct(c->mds, &call);
		now = lode_now_ms();
		/*
		 * A connection that failed before the MDS could have seen the request (refused,
		 * or reset while the MDS restarts) is retried within the restart grace: the MDS
		 * acknowledges a mutation only after it is durable, and a retried mutation that
		 * did apply answers with the error a repeat gives (EEXIST, ENOENT), which is
		 * what a local file system's caller would see after a crash, too.
		 */
		if (retryable(rc)) {
			gone = atomic_load(&c->mds_gone_since_ms);
			if (!gone) {
				uint64_t zero = 0;

				atomic_compare_exchange_strong(&c->mds_gone_since_ms, &zero, now);
				gone = atomic_load(&c->mds_gone_since_ms);
			}
			until = gone + MDS_RESTART_GRACE_MS < deadline ? gone + MDS_RESTART_GRACE_MS
								       : deadline;
			if (now + backoff < until) {
				usleep(backoff * 1000);
				if (backoff < 500)
					backoff *= 2;
				continue;
			}
			return rc;
		}
		if (!no_answer(rc) &&
		    atomic_load_explicit(&c->mds_gone_since_ms, memory_order_relaxed))
			atomic_store(&c->mds_gone_since_ms, 0); /* the MDS answered */
		if (g) {
			g->answered = !no_answer(rc);
			g->renewed = call.reply_grant_flag;
			g->new_grant = call.reply_grant;
		}
		if (!rc && reply_data_len)
			*reply_data_len = call.reply_data_len;
		if (!rc && reply && call.reply_body_len != reply_max)
			return -EPROTO;
		return rc;
	}
}

int lode_client_mds_call(struct lode_client *c, uint8_t op, const void *body, uint32_t body_len,
			 const struct iovec *data, int data_iovcnt, void *reply, uint32_t reply_max,
			 void *reply_data, uint64_t reply_data_max, uint64_t *reply_data_len)
{
	return mds_call(c, op, c->lazy && lode_op_may_be_lazy(op), body, body_len, data,
			data_iovcnt, reply, reply_max, reply_data, reply_data_max, reply_data_len,
			NULL, NULL);
}

int lode_client_mds_call_cap(struct lode_client *c, uint8_t op, const void *body, uint32_t body_len,
			     const struct lode_wire_cap *cap)
{
	return mds_call(c, op, false, body, body_len, NULL, 0, NULL, 0, NULL, 0, NULL, cap, NULL);
}

int lode_client_mds_call_as(struct lode_client *c, uint8_t op, bool lazy, const void *body,
			    uint32_t body_len, const struct iovec *data, int data_iovcnt,
			    void *reply, uint32_t reply_max)
{
	return mds_call(c, op, lazy && lode_op_may_be_lazy(op), body, body_len, data, data_iovcnt,
			reply, reply_max, NULL, 0, NULL, NULL, NULL);
}

void lode_client_grant_return(struct lode_client *c, uint64_t dir, uint64_t token)
{
	struct lode_wire_grant_return_req q = {.dir = dir, .token = token};
	struct lode_call call = {.opcode = LODE_OP_GRANT_RETURN, .body = &q, .body_len = sizeof(q)};

	if (!lode_rpc_call_direct(c->mds, &call))
		atomic_fetch_add_explicit(&c->grants_returned, 1, memory_order_relaxed);
}

int lode_client_mds_call_name(struct lode_client *c, uint8_t op, uint64_t dir, const char *name,
			      size_t len, const void *body, uint32_t body_len, void *reply,
			      uint32_t reply_max, uint64_t *new_grant, uint64_t *sent_ms)
{
	struct grant_io g = {.token = lode_client_grant_adding(c, dir, name, len)};
	uint64_t sent = lode_now_ms();
	int rc;

	rc = mds_call(c, op, c->lazy && lode_op_may_be_lazy(op), body, body_len, NULL, 0, reply,
		      reply_max, NULL, 0, NULL, NULL, &g);
	if (lode_client_grant_added(c, dir, g.token, sent, g.renewed) && g.answered)
		lode_client_grant_return(c, dir, g.token);
	if (new_grant)
		*new_grant = rc ? 0 : g.new_grant;
	if (sent_ms)
		*sent_ms = sent;
	return rc;
}

/* ---- targets ---- */

/* Fetches the target list: *data (malloc'd, dlen bytes) holds the *count records the MDS
 * says it holds. */
static int fetch_targets(struct lode_client *c, char **data, uint64_t *dlen, uint32_t *count)
{
	size_t cap = LODE_TARGETS_MAX * (sizeof(struct lode_wire_target) + LODE_ADDR_MAX + 8);
	struct lode_wire_target_list_rep rep;
	char *buf = malloc(cap);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = lode_client_mds_call(c, LODE_OP_TARGET_LIST, NULL, 0, NULL, 0, &rep, sizeof(rep), buf,
				  cap, dlen);
	if (rc) {
		free(buf);
		return rc;
	}
	*data = buf;
	*count = rep.count;
	return 0;
}

int lode_client_targets_refresh(struct lode_client *c)
{
	const struct lode_wire_target *t;
	struct lode_name addr;
	uint64_t dlen = 0, pos = 0;
	uint32_t count;
	char *data;
	int rc;

	rc = fetch_targets(c, &data, &dlen, &count);
	if (rc)
		return rc;
	/* never half a list */
	if (lode_target_list_check(data, dlen, count)) {
		free(data);
		return -EPROTO;
	}
	pthread_mutex_lock(&c->lock);
	while (lode_target_next(data, dlen, &pos, &t, &addr) == 1) {
		struct target_slot *s = NULL;

		for (unsigned i = 0; i < c->ntargets; i++)
			if (c->targets[i].id == t->target_id)
				s = &c->targets[i];
		if (!s) {
			if (c->ntargets == LODE_TARGETS_MAX)
				continue;
			s = &c->targets[c->ntargets++];
			memset(s, 0, sizeof(*s));
			s->id = t->target_id;
		}
		s->up = t->state == LODE_TARGET_UP;
		s->admin = t->admin;
		s->bytes_free = t->bytes_free;
		s->suspect_until_ms = 0;
		if (strlen(s->addr) != addr.len || memcmp(s->addr, addr.ptr, addr.len)) {
			/* the OSS moved: a new connection for calls from now on; the old one
			 * stays valid for calls in flight and is closed with the rpc */
			memcpy(s->addr, addr.ptr, addr.len);
			s->addr[addr.len] = 0;
			memset(s->conn, 0, sizeof(s->conn));
		}
	}
	c->targets_refreshed_ms = lode_now_ms();
	pthread_mutex_unlock(&c->lock);
	free(data);
	return 0;
}

#define TARGETS_REFRESH_MS 1000

void lode_client_targets_maybe_refresh(struct lode_client *c)
{
	uint64_t now = lode_now_ms();
	bool stale = false;

	pthread_mutex_lock(&c->lock);
	if (now - c->targets_refreshed_ms >= TARGETS_REFRESH_MS)
		for (unsigned i = 0; i < c->ntargets; i++)
			if (!c->targets[i].up || c->targets[i].suspect_until_ms > now)
				stale = true;
	pthread_mutex_unlock(&c->lock);
	if (stale)
		lode_client_targets_refresh(c); /* best effort: on failure the old view stays */
}

unsigned lode_client_target_health(struct lode_client *c, uint32_t id)
{
	uint64_t now = lode_now_ms();
	unsigned health = 2; /* unknown yet: try it */

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++) {
		if (c->targets[i].id != id)
			continue;
		if (!c->targets[i].up)
			health = 0;
		else if (c->targets[i].suspect_until_ms > now)
			health = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return health;
}

bool lode_client_target_is_up(struct lode_client *c, uint32_t id)
{
	return lode_client_target_health(c, id) == 2;
}

void lode_client_target_suspect(struct lode_client *c, uint32_t id)
{
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++)
		if (c->targets[i].id == id)
			c->targets[i].suspect_until_ms = lode_now_ms() + TARGETS_REFRESH_MS;
	pthread_mutex_unlock(&c->lock);
}

/* The chain hop of target id: its address as the target list has it. */
int lode_client_target_hop(struct lode_client *c, uint32_t id, struct lode_wire_chain_hop *h)
{
	int rc = -ENXIO;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++) {
		size_t len = strlen(c->targets[i].addr);

		if (c->targets[i].id != id)
			continue;
		if (len && len <= LODE_ADDR_MAX) {
			memset(h, 0, sizeof(*h));
			h->target_id = id;
			h->addr_len = (uint16_t)len;
			memcpy(h->addr, c->targets[i].addr, len);
			rc = 0;
		}
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void lode_client_write_gen_bump(struct lode_client *c)
{
	atomic_fetch_add_explicit(&c->write_gen, 1, memory_order_acq_rel);
}

static int target_lookup(struct lode_client *c, uint32_t id, struct lode_rpc_conn **out)
{
	int rc = -ENXIO;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->ntargets; i++) {
		struct target_slot *s = &c->targets[i];

		if (s->id != id)
			continue;
		unsigned n = c->nrpc, k;

		if (!strncmp(s->addr, "rdma://", 7) && n < 2)
			n = 2;
		k = s->next_conn++ % n;
		struct lode_rpc_conn **conn = &s->conn[k];

		rc = 0;
		if (!*conn)
			rc = lode_rpc_conn_open(c->rpc[k % c->nrpc], s->addr, conn);
		if (!rc)
			*out = *conn;
		break;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int lode_client_target_conn(struct lode_client *c, uint32_t id, struct lode_rpc_conn **out)
{
	int rc = target_lookup(c, id, out);

	if (rc != -ENXIO)
		return rc;
	rc = lode_client_targets_refresh(c);
	if (rc)
		return rc;
	return target_lookup(c, id, out);
}

int lode_targets(struct lode_client *c, struct lode_target_info *out, int max)
{
	const struct lode_wire_target *t;
	struct lode_name addr;
	uint64_t dlen = 0, pos = 0;
	uint32_t count;
	int rc, n = 0;
	char *data;

	rc = fetch_targets(c, &data, &dlen, &count);
	if (rc)
		return rc;
	if (lode_target_list_check(data, dlen, count)) {
		free(data);
		return -EPROTO;
	}
	while (lode_target_next(data, dlen, &pos, &t, &addr) == 1) {
		if (n < max) {
			struct lode_target_info *ti = &out[n];

			memset(ti, 0, sizeof(*ti));
			ti->id = t->target_id;
			ti->up = t->state == LODE_TARGET_UP;
			ti->bytes_total = t->bytes_total;
			ti->bytes_free = t->bytes_free;
			ti->objects = t->objects;
			ti->last_seen_ms = t->last_seen_ms;
			ti->admin = t->admin;
			memcpy(ti->addr, addr.ptr,
			       addr.len < sizeof(ti->addr) ? addr.len : sizeof(ti->addr) - 1);
		}
		n++;
	}
	free(data);
	return n;
}

/* ---- connect ---- */

/* How many I/O threads: the option, else LODE_IO_THREADS, else one per CPU; 1 to
 * IO_THREADS_MAX. Each receives and verifies the data of its connections. */
static unsigned io_threads(const struct lode_client_opts *o)
{
	const char *env = getenv("LODE_IO_THREADS");
	long n = o->io_threads;

	if (!n && env && *env) {
		char *end;

		n = strtol(env, &end, 10);
		if (*end || n < 1)
			n = 0; /* not a count: the default */
	}
	if (!n)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > IO_THREADS_MAX ? IO_THREADS_MAX : (unsigned)n;
}

static void rpcs_destroy(struct lode_client *c)
{
	for (unsigned i = 0; i < c->nrpc; i++)
		lode_rpc_destroy(c->rpc[i]);
	c->nrpc = 0;
}

/* The key of opts.key_file, else of LODE_KEY_FILE; none for "" or neither. */
static int load_keys(const struct lode_client_opts *o, struct lode_keyring *kr, bool *has)
{
	const char *path = o->key_file;
	int rc;

	if (!path)
		path = getenv("LODE_KEY_FILE");
	*has = false;
	if (!path || !*path)
		return 0;
	/* the reason goes nowhere: library code does not print; lode-fuse and lodectl load
	 * the file themselves first to say why */
	rc = lode_keyring_load(path, kr, NULL, 0);
	*has = rc == 0;
	return rc;
}

int lode_connect(const char *mds_addr, const struct lode_client_opts *opts,
		 struct lode_client **out)
{
	struct lode_client_opts o = {0};
	struct lode_wire_hello_req hello = {.role = LODE_ROLE_CLIENT};
	struct lode_wire_hello_rep rep;
	struct lode_client *c;
	struct lode_keyring keys;
	bool has_key = false;
	int rc;

	if (opts)
		memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->grant_lock, NULL);
	lode_client_closer_init(c);
	c->timeout_ms = o.timeout_ms ? o.timeout_ms : 30000;
	c->max_inflight = o.max_inflight ? o.max_inflight : 64;
	c->lazy = o.size >= offsetof(struct lode_client_opts, lazy_namespace) + sizeof(int) &&
		  o.lazy_namespace;
	c->lazy_data =
	    o.size >= offsetof(struct lode_client_opts, lazy_data) + sizeof(int) && o.lazy_data;
	if (o.use_process_creds || !opts || o.size < offsetof(struct lode_client_opts, gid) + 4) {
		c->creds = creds_pack((uint32_t)geteuid(), (uint32_t)getegid());
		process_groups(c);
	} else {
		c->creds = creds_pack(o.uid, o.gid);
	}
	if (getrandom(&c->client_id, sizeof(c->client_id), 0) != sizeof(c->client_id))
		c->client_id = (uint64_t)getpid() << 32 ^ (uint64_t)lode_now_ns();
	hello.client_id = c->client_id;
	rc = load_keys(&o, &keys, &has_key);
	if (rc)
		goto err_rpc;
	for (unsigned want = io_threads(&o); c->nrpc < want; c->nrpc++) {
		rc = lode_rpc_create(&c->rpc[c->nrpc], c->timeout_ms);
		if (rc)
			goto err_rpc;
		rc = lode_rpc_set_auth(c->rpc[c->nrpc], has_key ? &keys : NULL,
				       has_key ? lode_keyring_best_role(&keys) : LODE_ROLE_CLIENT);
		if (rc) {
			c->nrpc++;
			goto err_rpc;
		}
	}
	sodium_memzero(&keys, sizeof(keys));
	rc = lode_rpc_conn_open(c->rpc[0], mds_addr, &c->mds);
	if (rc)
		goto err_rpc;
	rc = lode_rpc_simple(c->mds, LODE_OP_HELLO, &hello, sizeof(hello), &rep, sizeof(rep));
	if (rc)
		goto err_rpc;
	if (rep.server_role != 1) {
		rc = -EPROTO; /* that address is not an MDS */
		goto err_rpc;
	}
	*out = c;
	return 0;

err_rpc:
	sodium_memzero(&keys, sizeof(keys));
	lode_client_closer_stop(c);
	rpcs_destroy(c);
	pthread_mutex_destroy(&c->grant_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return rc;
}

void lode_disconnect(struct lode_client *c)
{
	if (!c)
		return;
	lode_client_closer_stop(c);
	rpcs_destroy(c);
	lode_client_grants_fini(c);
	pthread_mutex_destroy(&c->grant_lock);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int lode_probe(const char *addr, const char *key_file, unsigned timeout_ms, uint32_t *role)
{
	struct lode_client_opts o = {.size = sizeof(o), .key_file = key_file};
	struct lode_wire_hello_req hello = {.role = LODE_ROLE_CLIENT};
	struct lode_wire_hello_rep rep;
	struct lode_rpc_conn *conn;
	struct lode_keyring keys;
	struct lode_rpc *rpc = NULL;
	bool has_key = false;
	int rc;

	if (getrandom(&hello.client_id, sizeof(hello.client_id), 0) != sizeof(hello.client_id))
		hello.client_id = (uint64_t)getpid() << 32 ^ (uint64_t)lode_now_ns();
	rc = load_keys(&o, &keys, &has_key);
	if (rc)
		return rc;
	rc = lode_rpc_create(&rpc, timeout_ms ? timeout_ms : 30000);
	if (!rc)
		rc = lode_rpc_set_auth(rpc, has_key ? &keys : NULL,
				       has_key ? lode_keyring_best_role(&keys) : LODE_ROLE_CLIENT);
	sodium_memzero(&keys, sizeof(keys));
	if (rc) {
		if (rpc)
			lode_rpc_destroy(rpc);
		return rc;
	}
	rc = lode_rpc_conn_open(rpc, addr, &conn);
	if (!rc)
		rc = lode_rpc_simple(conn, LODE_OP_HELLO, &hello, sizeof(hello), &rep, sizeof(rep));
	lode_rpc_destroy(rpc); /* closes conn */
	if (!rc)
		*role = rep.server_role;
	return rc;
}

int lode_buffer_register(void *buf, size_t len)
{
	return lode_rdma_mem_declare(buf, len);
}

int lode_buffer_unregister(void *buf)
{
	return lode_rdma_mem_forget(buf);
}
