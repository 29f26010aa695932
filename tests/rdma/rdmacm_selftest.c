/*
 * rdmacm_selftest - proves that librdmacm works on the soft-RoCE device of
 * tests/rdma/vm.sh, the way Lode's RDMA transport uses it: listen on an IP address,
 * resolve it from a client, connect with private data, SEND one message, disconnect.
 *
 * Both ends live in one process on one event channel, driven by one loop, so that every
 * wait is bounded by a deadline. The listener binds port 0, as the daemons do under test.
 *
 * usage: rdmacm_selftest [IP]   (default: $LODE_RDMA_IP)
 * Exits 0 on success, 77 outside the VM (no address or no RDMA device), 1 otherwise.
 */
#include <rdma/rdma_cma.h>
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MSG_LEN	     64
#define WAIT_S	     30 /* TCG emulation is slow; a healthy run takes well under a second */
#define RESOLVE_MS   5000
#define PRIVATE_DATA "lode-rdmacm-selftest"

/* One end of the connection and the verbs objects behind its QP. */
struct end {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[MSG_LEN];
	int established;
	int disconnected;
};

static int fail(const char *what)
{
	fprintf(stderr, "rdmacm_selftest: FAIL: %s (%s)\n", what, strerror(errno));
	return -1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Creates the QP of e on id, with its own PD, CQ and registered message buffer. */
static int end_setup(struct end *e, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1},
	};

	e->id = id;
	e->pd = ibv_alloc_pd(id->verbs);
	if (!e->pd)
		return fail("ibv_alloc_pd");
	e->cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0);
	if (!e->cq)
		return fail("ibv_create_cq");
	e->mr = ibv_reg_mr(e->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		return fail("ibv_reg_mr");
	attr.send_cq = e->cq;
	attr.recv_cq = e->cq;
	if (rdma_create_qp(id, e->pd, &attr))
		return fail("rdma_create_qp");
	return 0;
}

static void end_close(struct end *e)
{
	if (e->id && e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
}

static int post_recv(struct end *e)
{
	struct ibv_sge sge = {(uintptr_t)e->buf, sizeof(e->buf), e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(e->id->qp, &wr, &bad) ? fail("ibv_post_recv") : 0;
}

static int post_send(struct end *e)
{
	struct ibv_sge sge = {(uintptr_t)e->buf, sizeof(e->buf), e->mr->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = 2,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_SEND,
	    .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;

	return ibv_post_send(e->id->qp, &wr, &bad) ? fail("ibv_post_send") : 0;
}

/* Waits until cq yields one successful completion; returns its byte count or -1. */
static int wait_completion(struct ibv_cq *cq, double deadline)
{
	struct ibv_wc wc;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return fail("ibv_poll_cq");
		if (n == 1 && wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "rdmacm_selftest: completion: %s\n",
				ibv_wc_status_str(wc.status));
			errno = EIO;
			return fail("completion with error");
		}
		if (n == 1)
			return (int)wc.byte_len;
		if (now_s() > deadline) {
			errno = ETIMEDOUT;
			return fail("no completion within the time limit");
		}
	}
}

/*
 * Handles one connection-manager event for the client cli or the server srv (whose id
 * arrives with the connect request). Returns 0 to go on, -1 on a failure.
 */
static int handle_event(struct rdma_cm_event *ev, struct end *cli, struct end *srv)
{
	struct rdma_conn_param param = {
	    .responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};

	printf("rdmacm_selftest: %s event %s\n", ev->id == cli->id ? "client" : "server",
	       rdma_event_str(ev->event));
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return rdma_resolve_route(ev->id, RESOLVE_MS) ? fail("rdma_resolve_route") : 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (end_setup(cli, ev->id))
			return -1;
		param.private_data = PRIVATE_DATA;
		param.private_data_len = sizeof(PRIVATE_DATA);
		return rdma_connect(ev->id, &param) ? fail("rdma_connect") : 0;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (srv->id) {
			errno = EPROTO;
			return fail("a second connect request");
		}
		if (end_setup(srv, ev->id) || post_recv(srv))
			return -1;
		if (ev->param.conn.private_data_len < sizeof(PRIVATE_DATA) ||
		    memcmp(ev->param.conn.private_data, PRIVATE_DATA, sizeof(PRIVATE_DATA))) {
			errno = EPROTO;
			return fail("private data of the connect request differs");
		}
		return rdma_accept(ev->id, &param) ? fail("rdma_accept") : 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (ev->id == cli->id) {
			cli->established = 1;
			snprintf(cli->buf, sizeof(cli->buf), "hello over rdma_cm to port %u",
				 ntohs(rdma_get_dst_port(ev->id)));
			return post_send(cli);
		}
		srv->established = 1;
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The side that receives the disconnect request must answer it with its own
		 * rdma_disconnect(); otherwise the initiator sees DISCONNECTED only when
		 * its request times out, tens of seconds later.
		 */
		if (ev->id != cli->id && !srv->disconnected)
			rdma_disconnect(ev->id);
		(ev->id == cli->id ? cli : srv)->disconnected = 1;
		return 0;
	default:
		fprintf(stderr, "rdmacm_selftest: unexpected event %s, status %d\n",
			rdma_event_str(ev->event), ev->status);
		errno = ev->status < 0 ? -ev->status : EPROTO;
		return fail("connection manager event");
	}
}

/* Runs the event loop until done(cli, srv) holds; returns 0, or -1 on failure or timeout. */
static int run_events(struct rdma_event_channel *ch, struct end *cli, struct end *srv,
		      int (*done)(const struct end *, const struct end *), double deadline)
{
	while (!done(cli, srv)) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct rdma_cm_event *ev;
		int left_ms = (int)((deadline - now_s()) * 1000);
		int rc;

		if (left_ms <= 0) {
			errno = ETIMEDOUT;
			return fail("connection manager events did not arrive in time");
		}
		if (poll(&pfd, 1, left_ms) < 0 && errno != EINTR)
			return fail("poll");
		if (!(pfd.revents & POLLIN))
			continue;
		if (rdma_get_cm_event(ch, &ev))
			return fail("rdma_get_cm_event");
		rc = handle_event(ev, cli, srv);
		rdma_ack_cm_event(ev);
		if (rc)
			return -1;
	}
	return 0;
}

static int both_established(const struct end *cli, const struct end *srv)
{
	return cli->established && srv->established;
}

static int both_disconnected(const struct end *cli, const struct end *srv)
{
	return cli->disconnected && srv->disconnected;
}

int main(int argc, char **argv)
{
	const char *ip = argc > 1 ? argv[1] : getenv("LODE_RDMA_IP");
	struct sockaddr_in addr = {.sin_family = AF_INET};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listener = NULL;
	struct end cli = {0}, srv = {0};
	struct rdma_cm_id *cli_id;
	double deadline = now_s() + WAIT_S;
	int len, rc = 1;

	if (!ip || inet_pton(AF_INET, ip, &addr.sin_addr) != 1) {
		printf("rdmacm_selftest: SKIP: no IPv4 address for rxe (run it through "
		       "tests/rdma/vm.sh, which sets LODE_RDMA_IP)\n");
		return 77;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		printf("rdmacm_selftest: SKIP: no RDMA connection manager: %s\n", strerror(errno));
		return 77;
	}
	if (rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP)) {
		fail("rdma_create_id (listener)");
		goto out_channel;
	}
	if (rdma_bind_addr(listener, (struct sockaddr *)&addr) || rdma_listen(listener, 4)) {
		fail("rdma_bind_addr/rdma_listen");
		goto out_ids;
	}
	addr.sin_port = rdma_get_src_port(listener);
	if (rdma_create_id(ch, &cli_id, NULL, RDMA_PS_TCP)) {
		fail("rdma_create_id (client)");
		goto out_ids;
	}
	cli.id = cli_id;
	if (rdma_resolve_addr(cli_id, NULL, (struct sockaddr *)&addr, RESOLVE_MS)) {
		fail("rdma_resolve_addr");
		goto out_ids;
	}
	if (run_events(ch, &cli, &srv, both_established, deadline))
		goto out_ids;
	if (wait_completion(cli.cq, deadline) < 0)
		goto out_ids;
	len = wait_completion(srv.cq, deadline);
	if (len < 0)
		goto out_ids;
	if (len != MSG_LEN || memcmp(cli.buf, srv.buf, MSG_LEN)) {
		errno = EBADMSG;
		fail("the received message differs from the one sent");
		goto out_ids;
	}
	if (rdma_disconnect(cli.id)) {
		fail("rdma_disconnect");
		goto out_ids;
	}
	if (run_events(ch, &cli, &srv, both_disconnected, deadline))
		goto out_ids;
	printf("rdmacm_selftest: PASS: %s:%u on %s: connect, SEND/RECV \"%s\", disconnect\n", ip,
	       ntohs(addr.sin_port), ibv_get_device_name(srv.id->verbs->device), srv.buf);
	rc = 0;
out_ids:
	end_close(&srv);
	end_close(&cli);
	if (listener)
		rdma_destroy_id(listener);
out_channel:
	rdma_destroy_event_channel(ch);
	return rc;
}
