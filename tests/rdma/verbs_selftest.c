/*
 * verbs_selftest - proves that raw verbs work on the soft-RoCE device of tests/rdma/vm.sh,
 * independently of Lode's transport.
 *
 * One process opens the device, connects two RC queue pairs to each other over the
 * port's RoCE v2 GID, RDMA WRITEs a buffer from one into the other's memory, then SENDs a
 * short message that the other RECVs, and checks both payloads byte for byte.
 *
 * usage: verbs_selftest [DEVICE [GID_INDEX]]   (default: $LODE_RDMA_DEV, $LODE_RDMA_GID_INDEX)
 * Exits 0 on success, 77 when there is no RDMA device (not inside the VM), 1 otherwise.
 */
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WRITE_LEN (1u << 20)
#define MSG_LEN	  64
#define WAIT_S	  30 /* TCG emulation is slow; a healthy run takes well under a second */
#define WR_WRITE  1
#define WR_SEND	  2
#define WR_RECV	  3

/* One side of the loopback connection. */
struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* WRITE_LEN bytes of RDMA data, then MSG_LEN bytes of message */
};

static int fail(const char *what)
{
	fprintf(stderr, "verbs_selftest: FAIL: %s\n", what);
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for one completion with id wr_id on cq; returns 0, or -1 on error or timeout. */
static int wait_completion(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *wc)
{
	double deadline = now_s() + WAIT_S;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return fail("ibv_poll_cq");
		if (n == 0) {
			if (now_s() > deadline)
				return fail("no completion within the time limit");
			continue;
		}
		if (wc->status != IBV_WC_SUCCESS) {
			fprintf(stderr, "verbs_selftest: work request %llu: %s\n",
				(unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
			return fail("completion with error");
		}
		if (wc->wr_id == wr_id)
			return 0;
		fprintf(stderr, "verbs_selftest: unexpected completion %llu\n",
			(unsigned long long)wc->wr_id);
		return fail("completion out of order");
	}
}

static int side_open(struct side *s, struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr init = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	};

	s->buf = calloc(1, WRITE_LEN + MSG_LEN);
	if (!s->buf)
		return fail("calloc");
	s->mr = ibv_reg_mr(pd, s->buf, WRITE_LEN + MSG_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->mr)
		return fail("ibv_reg_mr");
	s->cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!s->cq)
		return fail("ibv_create_cq");
	init.send_cq = s->cq;
	init.recv_cq = s->cq;
	s->qp = ibv_create_qp(pd, &init);
	if (!s->qp)
		return fail("ibv_create_qp");
	return 0;
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	free(s->buf);
}

/* Moves qp through INIT, RTR and RTS, connected to queue pair remote_qpn at gid. */
static int connect_qp(struct ibv_qp *qp, uint32_t remote_qpn, const union ibv_gid *gid,
		      int gid_index, enum ibv_mtu mtu)
{
	struct ibv_qp_attr init = {
	    .qp_state = IBV_QPS_INIT,
	    .port_num = 1,
	    .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp_attr rtr = {
	    .qp_state = IBV_QPS_RTR,
	    .path_mtu = mtu,
	    .dest_qp_num = remote_qpn,
	    .max_dest_rd_atomic = 1,
	    .min_rnr_timer = 12,
	    .ah_attr = {.is_global = 1,
			.port_num = 1,
			.grh = {.dgid = *gid, .sgid_index = (uint8_t)gid_index, .hop_limit = 1}},
	};
	struct ibv_qp_attr rts = {
	    .qp_state = IBV_QPS_RTS,
	    .timeout = 14,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .max_rd_atomic = 1,
	};

	if (ibv_modify_qp(qp, &init,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return fail("modify QP to INIT");
	if (ibv_modify_qp(qp, &rtr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return fail("modify QP to RTR");
	if (ibv_modify_qp(qp, &rts,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		return fail("modify QP to RTS");
	return 0;
}

/* a WRITEs its buffer into b's, then SENDs a message that b RECVs; both are checked. */
static int exchange(struct side *a, struct side *b)
{
	struct ibv_sge recv_sge = {(uintptr_t)(b->buf + WRITE_LEN), MSG_LEN, b->mr->lkey};
	struct ibv_recv_wr recv = {.wr_id = WR_RECV, .sg_list = &recv_sge, .num_sge = 1};
	struct ibv_sge write_sge = {(uintptr_t)a->buf, WRITE_LEN, a->mr->lkey};
	struct ibv_send_wr write = {
	    .wr_id = WR_WRITE,
	    .sg_list = &write_sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)b->buf, .rkey = b->mr->rkey},
	};
	struct ibv_sge send_sge = {(uintptr_t)(a->buf + WRITE_LEN), MSG_LEN, a->mr->lkey};
	struct ibv_send_wr send = {
	    .wr_id = WR_SEND,
	    .sg_list = &send_sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_SEND,
	    .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr *bad_recv;
	struct ibv_send_wr *bad_send;
	struct ibv_wc wc;

	for (uint32_t i = 0; i < WRITE_LEN; i++)
		a->buf[i] = (uint8_t)(i * 7 + i / 4096);
	snprintf((char *)a->buf + WRITE_LEN, MSG_LEN, "send/recv after a %u-byte write", WRITE_LEN);

	if (ibv_post_recv(b->qp, &recv, &bad_recv))
		return fail("ibv_post_recv");
	if (ibv_post_send(a->qp, &write, &bad_send))
		return fail("ibv_post_send (RDMA WRITE)");
	if (wait_completion(a->cq, WR_WRITE, &wc))
		return -1;
	if (ibv_post_send(a->qp, &send, &bad_send))
		return fail("ibv_post_send (SEND)");
	if (wait_completion(a->cq, WR_SEND, &wc))
		return -1;
	if (wait_completion(b->cq, WR_RECV, &wc))
		return -1;
	if (wc.byte_len != MSG_LEN)
		return fail("RECV completed with the wrong length");
	if (memcmp(a->buf, b->buf, WRITE_LEN))
		return fail("RDMA WRITE data differs");
	if (memcmp(a->buf + WRITE_LEN, b->buf + WRITE_LEN, MSG_LEN))
		return fail("SEND data differs");
	return 0;
}

static struct ibv_device *find_device(struct ibv_device **list, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	return NULL;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : getenv("LODE_RDMA_DEV");
	const char *gid_arg = argc > 2 ? argv[2] : getenv("LODE_RDMA_GID_INDEX");
	int gid_index = gid_arg ? atoi(gid_arg) : 1;
	struct side a = {0}, b = {0};
	struct ibv_device **list;
	struct ibv_device *dev;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int n = 0, rc = 1;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		printf("verbs_selftest: SKIP: no RDMA device (run it through tests/rdma/vm.sh)\n");
		ibv_free_device_list(list);
		return 77;
	}
	dev = find_device(list, n, name);
	if (!dev) {
		fprintf(stderr, "verbs_selftest: FAIL: no device named %s\n", name);
		goto out_list;
	}
	ctx = ibv_open_device(dev);
	if (!ctx) {
		fail("ibv_open_device");
		goto out_list;
	}
	if (ibv_query_port(ctx, 1, &port) || port.state != IBV_PORT_ACTIVE) {
		fail("port 1 is not active");
		goto out_ctx;
	}
	if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fail("ibv_query_gid");
		goto out_ctx;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fail("ibv_alloc_pd");
		goto out_ctx;
	}
	if (side_open(&a, ctx, pd) || side_open(&b, ctx, pd))
		goto out_sides;
	if (connect_qp(a.qp, b.qp->qp_num, &gid, gid_index, port.active_mtu) ||
	    connect_qp(b.qp, a.qp->qp_num, &gid, gid_index, port.active_mtu))
		goto out_sides;
	if (exchange(&a, &b))
		goto out_sides;
	printf("verbs_selftest: PASS: %s GID index %d, MTU %d: RDMA WRITE of %u bytes and "
	       "SEND/RECV of %d bytes verified\n",
	       ibv_get_device_name(dev), gid_index, 128 << port.active_mtu, WRITE_LEN, MSG_LEN);
	rc = 0;
out_sides:
	side_close(&b);
	side_close(&a);
	ibv_dealloc_pd(pd);
out_ctx:
	ibv_close_device(ctx);
out_list:
	ibv_free_device_list(list);
	return rc;
}
