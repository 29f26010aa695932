/* SPDX-License-Identifier: MIT */
/*
 * liblode: how writes and fsyncs reach the copies of a mirrored stripe. Fan-out (write.c)
 * sends one request per copy; chain, here, sends one request to the first live copy with
 * the others as its forwarding chain, and the OSS pass it on. Both record a copy that
 * failed the same way, before the write is acknowledged. Also which mode is in force
 * (lode_set_replication, LODE_REPLICATION).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "io.h"

/* ---- replication mode ---- */

/* What LODE_REPLICATION_DEFAULT means when the environment does not say. Chain: on the
 * 2-core bench machine both modes write 2 copies equally fast (the servers' CPU limits
 * both), but the client spends a third less CPU per GiB, and it sends each byte once
 * instead of once per copy, which is what limits a client's writes on a real network
 * (docs/benchmarks.md). */
#define REPLICATION_BUILTIN LODE_REPLICATION_CHAIN

static int env_mode;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void env_read(void)
{
	const char *v = getenv("LODE_REPLICATION");
	int m = v ? lode_replication_from_name(v) : 0;

	env_mode = m > 0 ? m : 0; /* an unknown value is ignored, like an unset one */
}

int lode_replication_from_name(const char *name)
{
	if (!strcmp(name, "fanout"))
		return LODE_REPLICATION_FANOUT;
	if (!strcmp(name, "chain"))
		return LODE_REPLICATION_CHAIN;
	if (!strcmp(name, "default"))
		return LODE_REPLICATION_DEFAULT;
	return -EINVAL;
}

const char *lode_replication_name(int mode)
{
	switch (mode) {
	case LODE_REPLICATION_DEFAULT:
		return "default";
	case LODE_REPLICATION_FANOUT:
		return "fanout";
	case LODE_REPLICATION_CHAIN:
		return "chain";
	default:
		return "?";
	}
}

int lode_set_replication(struct lode_client *c, int mode)
{
	if (mode != LODE_REPLICATION_DEFAULT && mode != LODE_REPLICATION_FANOUT &&
	    mode != LODE_REPLICATION_CHAIN)
		return -EINVAL;
	atomic_store(&c->replication, mode);
	return 0;
}

int lode_replication(struct lode_client *c)
{
	int m = atomic_load(&c->replication);

	if (m)
		return m;
	pthread_once(&env_once, env_read);
	return env_mode ? env_mode : REPLICATION_BUILTIN;
}

/* ---- chained requests ---- */

int lode_client_chain_add(struct chain *ch, unsigned idx)
{
	uint32_t tid = ch->f->layout.targets[idx];
	int rc;

	rc = lode_client_target_conn(ch->f->c, tid, &ch->conn[ch->n]);
	if (!rc)
		rc = lode_client_target_hop(ch->f->c, tid, &ch->hop[ch->n]);
	if (rc)
		return rc;
	ch->idx[ch->n++] = idx;
	return 0;
}

static void chain_copy_failed(struct chain *ch, unsigned k, int rc)
{
	ch->copy_err = rc;
	lode_client_file_report(ch->f, ch->idx[k], LODE_REPORT_WRITE_FAILED);
	if (lode_client_unreachable(rc))
		lode_client_target_suspect(ch->f->c, ch->f->layout.targets[ch->idx[k]]);
}

/* Keeps the copies whose bit is set in keep, in order, for the next round. */
static void chain_keep(struct chain *ch, unsigned keep)
{
	unsigned j = 0;

	for (unsigned k = 0; k < ch->n; k++) {
		if (!(keep & (1u << k)))
			continue;
		ch->idx[j] = ch->idx[k];
		ch->conn[j] = ch->conn[k];
		ch->hop[j] = ch->hop[k];
		j++;
	}
	ch->n = j;
}

static void chain_done(struct lode_call *call);

void lode_client_chain_submit(struct chain *ch)
{
	unsigned t = ch->f->c->timeout_ms;
	struct lode_wire_chain hdr = {
	    .self_target = ch->hop[0].target_id,
	    .count = (uint16_t)(ch->n - 1),
	    /* the head must give up on its downstream before we give up on the head */
	    .timeout_ms = t < 4 ? 1 : t - t / 4,
	};
	char *b = (char *)ch->body + ch->fixed_len;

	if (hdr.timeout_ms > LODE_CHAIN_TIMEOUT_MAX)
		hdr.timeout_ms = LODE_CHAIN_TIMEOUT_MAX;
	memcpy(b, &hdr, sizeof(hdr));
	memcpy(b + sizeof(hdr), &ch->hop[1], (ch->n - 1) * sizeof(ch->hop[0]));
	memset(&ch->call, 0, sizeof(ch->call));
	ch->call.opcode = ch->op;
	ch->call.body = ch->body;
	ch->call.cap = &ch->cap;
	ch->call.body_len = (uint32_t)(ch->fixed_len + lode_chain_size(ch->n - 1));
	if (ch->data) {
		ch->call.data = ch->data;
		ch->call.data_iovcnt = 1;
	}
	ch->call.reply_body = &ch->rep;
	ch->call.reply_body_max = sizeof(ch->rep);
	ch->call.done = chain_done;
	if (ch->direct) {
		lode_rpc_call_direct(ch->conn[0], &ch->call);
		chain_done(&ch->call); /* may send the next round, again on this thread */
		return;
	}
	lode_rpc_submit(ch->conn[0], &ch->call);
}

/* The whole request failed at the head: which copies are known failed, which to retry. */
static unsigned chain_head_failed(struct chain *ch, int rc)
{
	if (rc == -ETIMEDOUT) {
		/* the head may still be working on it, and forward it late */
		for (unsigned k = 0; k < ch->n; k++)
			chain_copy_failed(ch, k, rc);
		return 0;
	}
	if (lode_client_unreachable(rc)) {
		/* nothing reached the others through it (or the same bytes did) */
		chain_copy_failed(ch, 0, rc);
		return ((1u << ch->n) - 1) & ~1u;
	}
	/* refused as a request (a malformed chain, a stale address, no memory): an error of
	 * the operation, as the same answer from one copy in fan-out */
	if (!ch->err)
		ch->err = rc == -EBADMSG ? -EIO : rc;
	return 0;
}

static void chain_done(struct lode_call *call)
{
	struct chain *ch = lode_container_of(call, struct chain, call);
	const struct lode_wire_obj_chain_rep *rep;
	bool head_stored = false;
	unsigned retry = 0;
	int rc = call->status;

	if (!rc)
		rc = lode_dec_obj_chain_rep(&ch->rep, call->reply_body_len, ch->n - 1, &rep);
	if (rc) {
		retry = chain_head_failed(ch, rc);
	} else {
		for (unsigned k = 0; k < ch->n; k++) {
			int st = lode_status_to_errno(rep->status[k]);

			if (!st) {
				ch->good++;
				head_stored |= k == 0;
				if (k == 0 && rep->obj.bytes_stored > ch->stored)
					ch->stored = rep->obj.bytes_stored;
			} else if (st == -ECANCELED)
				retry |= 1u << k;
			else if (lode_client_copy_failure(st))
				chain_copy_failed(ch, k, st);
			else if (!ch->err)
				ch->err = st == -EBADMSG ? -EIO : st;
		}
	}
	if (retry && !ch->err && ch->head_orders && head_stored) {
		/* sent alone, the copies after the head would take it out of the head's
		 * order: the writer resends it all through the head (its chunk hold orders
		 * overlapping writes alike on every copy) */
		ch->err = -ERESTART;
		retry = 0;
	}
	if (retry && !ch->err) {
		chain_keep(ch, retry);
		lode_client_chain_submit(ch);
		return;
	}
	ch->finish(ch);
}
