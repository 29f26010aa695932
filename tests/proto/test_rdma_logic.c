/* SPDX-License-Identifier: MIT */
/*
 * The device-free parts of the RDMA transport: control message encoding (every limit and
 * every malformed message is refused), the credit counter, and the registration cache
 * (hits inside declared buffers, transient registrations elsewhere, forgetting a buffer
 * while an I/O still uses it, eviction past the budget). Registration is faked.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rdma_msg.h"
#include "rdma_regcache.h"

static _Alignas(8) char buf[LODE_RDMA_MSG_MAX + 64];

static struct lode_wire_hdr hdr_of(uint32_t body_len, uint64_t data_len)
{
	struct lode_wire_hdr h = {.magic = LODE_WIRE_MAGIC,
				  .version = LODE_WIRE_VERSION,
				  .opcode = 1,
				  .req_id = 77,
				  .body_len = body_len,
				  .data_len = data_len};

	return h;
}

static void test_roundtrip_descs(void **state)
{
	struct lode_wire_hdr h = hdr_of(5, 3 << 20);
	struct lode_rdma_desc d[2] = {{.addr = 0x1000, .rkey = 9, .len = 1 << 20},
				      {.addr = 0x900000, .rkey = 10, .len = 2 << 20}};
	struct lode_rdma_desc sink = {.addr = 0xabc000, .rkey = 11, .len = 4 << 20};
	struct lode_rdma_frame f;
	long n;

	(void)state;
	n = lode_rdma_encode(buf, sizeof(buf), 3, LODE_RDMA_F_SINK, &h, "hello", &sink, d, 2, NULL);
	assert_true(n > 0);
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), 0);
	assert_int_equal(f.msg.credits, 3);
	assert_int_equal(f.msg.ndesc, 2);
	assert_true(f.has_sink);
	assert_int_equal(f.sink.rkey, 11);
	assert_int_equal(f.desc[1].addr, 0x900000);
	assert_int_equal(f.hdr.req_id, 77);
	assert_memory_equal(f.body, "hello", 5);
	/* every shorter message is refused */
	for (long cut = 0; cut < n; cut++)
		assert_int_equal(lode_rdma_decode(buf, (size_t)cut, &f), -EPROTO);
	/* a trailing byte too */
	assert_int_equal(lode_rdma_decode(buf, (size_t)n + 1, &f), -EPROTO);
}

static void test_inline_and_placed(void **state)
{
	char data[100];
	struct lode_wire_hdr h = hdr_of(0, sizeof(data));
	struct lode_rdma_frame f;
	long n;

	(void)state;
	memset(data, 0x5a, sizeof(data));
	n = lode_rdma_encode(buf, sizeof(buf), 0, LODE_RDMA_F_INLINE, &h, NULL, NULL, NULL, 0,
			     data);
	assert_true(n > 0);
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), 0);
	assert_memory_equal(f.inline_data, data, sizeof(data));

	h = hdr_of(0, 1 << 20);
	n = lode_rdma_encode(buf, sizeof(buf), 1, LODE_RDMA_F_PLACED, &h, NULL, NULL, NULL, 0,
			     NULL);
	assert_true(n > 0);
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), 0);

	/* inline data over the limit cannot be encoded */
	h = hdr_of(0, LODE_RDMA_INLINE_MAX + 1);
	assert_int_equal(
	    lode_rdma_encode(buf, sizeof(buf), 0, LODE_RDMA_F_INLINE, &h, NULL, NULL, NULL, 0, buf),
	    -EMSGSIZE);
	/* nor a body over the wire's limit, nor too many descriptors */
	h = hdr_of(LODE_BODY_MAX + 1, 0);
	assert_int_equal(lode_rdma_encode(buf, sizeof(buf), 0, 0, &h, buf, NULL, NULL, 0, NULL),
			 -EMSGSIZE);
	h = hdr_of(0, 1);
	assert_int_equal(lode_rdma_encode(buf, sizeof(buf), 0, 0, &h, NULL, NULL, NULL,
					  LODE_RDMA_DESC_MAX + 1, NULL),
			 -EMSGSIZE);
}

/* Builds a valid message, applies a corruption, and expects a refusal. */
static void test_malformed(void **state)
{
	struct lode_wire_hdr h = hdr_of(8, 2 << 20);
	struct lode_rdma_desc d[2] = {{.addr = 1, .rkey = 2, .len = 1 << 20},
				      {.addr = 3, .rkey = 4, .len = 1 << 20}};
	struct lode_rdma_frame f;
	struct lode_rdma_msg *m = (void *)buf;
	struct lode_wire_hdr *wh = (void *)(buf + sizeof(*m));
	long n;

	(void)state;
#define FRESH()                                                                                    \
	n = lode_rdma_encode(buf, sizeof(buf), 0, 0, &h, "12345678", NULL, d, 2, NULL);            \
	assert_true(n > 0)
	FRESH();
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), 0);
	FRESH();
	m->magic ^= 1;
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	m->version = 2;
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	m->flags |= 0x80;
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	m->ndesc = LODE_RDMA_DESC_MAX + 1;
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	m->credits = LODE_RDMA_DEPTH + 1;
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	wh->data_len += 1; /* descriptors no longer add up */
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	wh->body_len = LODE_BODY_MAX + 1;
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	m->flags |= LODE_RDMA_F_PLACED; /* two ways of carrying the data */
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	FRESH();
	wh->data_len = 0; /* descriptors for no data */
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
	/* a zero-length descriptor */
	d[1].len = 0;
	h.data_len = 1 << 20;
	FRESH();
	assert_int_equal(lode_rdma_decode(buf, (size_t)n, &f), -EPROTO);
#undef FRESH
	/* random bytes never crash the decoder, and are refused unless they decode whole */
	srand(1);
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)rand() % 512;

		for (size_t j = 0; j < len; j++)
			buf[j] = (char)rand();
		if (i & 1)
			memcpy(buf, &(struct lode_rdma_msg){.magic = LODE_RDMA_MAGIC, .version = 1},
			       len < 16 ? len : 16);
		(void)lode_rdma_decode(buf, len, &f);
	}
}

static void test_credits(void **state)
{
	struct lode_rdma_credits c = {.avail = 2};

	(void)state;
	assert_int_equal(lode_rdma_credit_take(&c), 0);
	assert_int_equal(lode_rdma_credit_take(&c), 0);
	assert_int_equal(lode_rdma_credit_take(&c), -EAGAIN);
	assert_int_equal(lode_rdma_credit_grant(&c, 1, 2), 0);
	assert_int_equal(lode_rdma_credit_take(&c), 0);
	/* a peer granting more than it could have re-posted is broken */
	assert_int_equal(lode_rdma_credit_grant(&c, 3, 2), -EPROTO);
	assert_int_equal(lode_rdma_credit_grant(&c, 2, 2), 0);
	assert_int_equal(lode_rdma_credit_grant(&c, 1, 2), -EPROTO);
	c.owed = 40;
	assert_int_equal(lode_rdma_credit_collect(&c), LODE_RDMA_DEPTH);
	assert_int_equal(lode_rdma_credit_collect(&c), 40 - LODE_RDMA_DEPTH);
	assert_int_equal(lode_rdma_credit_collect(&c), 0);
}

/* ---- registration cache, with a fake device ---- */

struct fake {
	int regs, deregs, live;
	int fail;
};

static int fake_reg(void *ctx, void *addr, size_t len, void **handle, uint32_t *lkey,
		    uint32_t *rkey)
{
	struct fake *f = ctx;

	(void)addr;
	(void)len;
	if (f->fail)
		return -ENOMEM;
	f->regs++;
	f->live++;
	*handle = (void *)(uintptr_t)f->regs;
	*lkey = *rkey = (uint32_t)f->regs;
	return 0;
}

static void fake_dereg(void *ctx, void *handle)
{
	struct fake *f = ctx;

	(void)handle;
	f->deregs++;
	f->live--;
}

static const struct lode_regcache_ops fake_ops = {.reg = fake_reg, .dereg = fake_dereg};

static void test_regcache(void **state)
{
	static char a[1 << 16], b[1 << 16], other[4096];
	struct fake f = {0};
	struct lode_regcache rc;
	struct lode_reg *r1, *r2, *t;

	(void)state;
	lode_regcache_init(&rc, &fake_ops, &f, sizeof(a) + sizeof(b));
	assert_int_equal(lode_rdma_mem_declare(a, sizeof(a)), 0);
	assert_int_equal(lode_rdma_mem_declare(a + 100, 10), -EINVAL); /* overlaps */
	assert_int_equal(lode_rdma_mem_declare(b, 0), -EINVAL);

	/* two I/Os inside the declared buffer share one registration of all of it */
	assert_int_equal(lode_regcache_get(&rc, a + 4096, 8192, &r1), 0);
	assert_int_equal(lode_regcache_get(&rc, a, sizeof(a), &r2), 0);
	assert_ptr_equal(r1, r2);
	assert_int_equal(r1->start, (uintptr_t)a);
	assert_int_equal(r1->len, sizeof(a));
	assert_int_equal(f.regs, 1);
	lode_regcache_put(&rc, r1);
	lode_regcache_put(&rc, r2);
	assert_int_equal(f.live, 1); /* kept for the next I/O */

	/* an undeclared buffer: registered for the one I/O, dropped after it */
	assert_int_equal(lode_regcache_get(&rc, other, sizeof(other), &t), 0);
	assert_int_equal(t->start, (uintptr_t)other);
	assert_int_equal(f.live, 2);
	lode_regcache_put(&rc, t);
	assert_int_equal(f.live, 1);
	/* a range that only starts inside a declared buffer is not covered by it */
	assert_int_equal(lode_regcache_get(&rc, a + sizeof(a) - 10, 20, &t), 0);
	assert_int_equal(f.live, 2);
	lode_regcache_put(&rc, t);
	assert_int_equal(rc.hits, 1);
	assert_int_equal(rc.misses, 1);
	assert_int_equal(rc.transients, 2);

	/* forgetting a buffer while an I/O uses it: dropped when that I/O completes */
	assert_int_equal(lode_regcache_get(&rc, a, 10, &r1), 0);
	assert_int_equal(lode_rdma_mem_forget(a), 0);
	assert_int_equal(lode_rdma_mem_forget(a), -ENOENT);
	assert_int_equal(f.live, 1);
	lode_regcache_put(&rc, r1);
	assert_int_equal(f.live, 0);
	/* and after that the range is no longer cached */
	assert_int_equal(lode_regcache_get(&rc, a, 10, &t), 0);
	lode_regcache_put(&rc, t);
	assert_int_equal(f.live, 0);

	/* past the budget, unused cached registrations are dropped, oldest first */
	lode_regcache_fini(&rc);
	lode_regcache_init(&rc, &fake_ops, &f, sizeof(a));
	assert_int_equal(lode_rdma_mem_declare(a, sizeof(a)), 0);
	assert_int_equal(lode_rdma_mem_declare(b, sizeof(b)), 0);
	assert_int_equal(lode_regcache_get(&rc, a, 1, &r1), 0);
	lode_regcache_put(&rc, r1);
	assert_int_equal(lode_regcache_get(&rc, b, 1, &r2), 0);
	lode_regcache_put(&rc, r2);
	assert_int_equal(f.live, 1); /* a's went */
	/* a failing registration is reported, nothing cached */
	f.fail = 1;
	assert_int_equal(lode_regcache_get(&rc, a, 1, &r1), -ENOMEM);
	f.fail = 0;
	lode_regcache_fini(&rc);
	assert_int_equal(f.live, 0);
	assert_int_equal(lode_rdma_mem_forget(a), 0);
	assert_int_equal(lode_rdma_mem_forget(b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roundtrip_descs), cmocka_unit_test(test_inline_and_placed),
	    cmocka_unit_test(test_malformed),	    cmocka_unit_test(test_credits),
	    cmocka_unit_test(test_regcache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
