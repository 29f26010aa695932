/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the OSS's request handlers in process (oss/handlers.c and the object store under
 * them), as a peer reaches them: request frames over a loopback connection to the OSS of
 * tests/oss/oss_fixture.c (lode_oss_server_ops on a lode_server, the store in a temporary
 * directory, removed at exit). Objects an input writes stay for the next ones.
 *
 * Chained writes make the OSS connect to the addresses a chain names; the harness caps a
 * chain's timeout at 2 s so that an address that never answers costs one slow input, not
 * a hang. It caps an OBJ_ALLOCATE at ALLOCATE_MAX bytes too: one asking for terabytes
 * really takes every free block of the disk (fallocate), for every process on the
 * machine, until the store is started afresh. Input and checks: frames_client.h.
 */
#include <errno.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"
#include "frames_client.h"
#include "fuzz.h"
#include "oss_fixture.h"

#define CHAIN_TIMEOUT_MS 2000
#define ALLOCATE_MAX	 (64ull << 20)
/* Inputs write objects that stay for the next ones, as on a live server: past this much
 * disk the store is started afresh (checked every STORE_CHECK_EVERY inputs), so that hours
 * of fuzzing do not fill the disk (a run at a thousand inputs a second wrote 74 GB in 8
 * minutes before this). */
#define STORE_MAX_BYTES	  (1ull << 30)
#define STORE_CHECK_EVERY 1024

static struct oss_fixture *f;
static char addr[128];

static void cap_request(uint8_t opcode, void *body, uint32_t len, uint64_t data_len)
{
	struct lode_msg m;

	if (opcode == LODE_OP_OBJ_ALLOCATE && len >= sizeof(struct lode_wire_obj_allocate_req)) {
		struct lode_wire_obj_allocate_req ar;

		memcpy(&ar, body, sizeof(ar));
		if (ar.length > ALLOCATE_MAX) {
			ar.length = ALLOCATE_MAX;
			memcpy(body, &ar, sizeof(ar));
		}
	}

	if (lode_msg_decode(opcode, body, len, data_len, &m) == 0 && m.chain &&
	    m.chain->timeout_ms > CHAIN_TIMEOUT_MS)
		((struct lode_wire_chain *)(uintptr_t)m.chain)->timeout_ms = CHAIN_TIMEOUT_MS;
}

static void cleanup(void)
{
	oss_fixture_free(f);
}

static uint64_t store_bytes;

static int add_blocks(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)path, (void)type, (void)ftw;
	store_bytes += (uint64_t)sb->st_blocks * 512;
	return 0;
}

/* A store grown past STORE_MAX_BYTES is replaced by an empty one (a new server: the
 * connection the last input kept is closed by it, and the next input dials anew). */
static void bound_store(void)
{
	static unsigned inputs;

	if (++inputs % STORE_CHECK_EVERY)
		return;
	store_bytes = 0;
	nftw(f->dir, add_blocks, 16, FTW_PHYS);
	if (store_bytes < STORE_MAX_BYTES)
		return;
	oss_fixture_free(f);
	f = oss_fixture_new();
	if (!f) {
		fprintf(stderr, "fuzz_oss_handler: cannot start a fresh OSS\n");
		abort();
	}
	snprintf(addr, sizeof(addr), "%s", lode_server_address(f->srv, 0));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct lode_loop *probe;

	(void)argc, (void)argv;
	if (lode_loop_create(&probe, 4)) {
		fprintf(stderr, "fuzz_oss_handler: skip: no io_uring here\n");
		exit(77);
	}
	lode_loop_destroy(probe);
	f = oss_fixture_new();
	if (!f) {
		fprintf(stderr, "fuzz_oss_handler: cannot start an OSS in this process\n");
		exit(1);
	}
	atexit(cleanup);
	snprintf(addr, sizeof(addr), "%s", lode_server_address(f->srv, 0));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_frames_run(addr, data, size, cap_request);
	fuzz_wait_idle(f->srv);
	bound_store();
	return 0;
}
