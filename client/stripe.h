/* SPDX-License-Identifier: MIT */
/*
 * Where a file's bytes live (docs/design.md, "Data placement"): byte off of a file lies in
 * stripe (off / stripe_size) % stripe_count, at object offset
 * (off / (stripe_size * stripe_count)) * stripe_size + off % stripe_size. Pure arithmetic
 * on a layout: no I/O, no locks, no client, so that tests link it alone
 * (tests/client/test_stripe.c).
 */
#ifndef LODE_CLIENT_STRIPE_H
#define LODE_CLIENT_STRIPE_H

#include <stdint.h>

#include "wire_spec.h"

#define IO_MAX (1u << 20) /* bytes per data request */

/* The size of stripe's object in a file of file_size bytes. */
uint64_t lode_client_object_size(const struct lode_wire_layout *l, uint64_t file_size,
				 unsigned stripe);
/* Where file offset off lives: stripe index and offset inside that stripe's object. */
void lode_client_stripe_map(const struct lode_wire_layout *l, uint64_t off, unsigned *stripe,
			    uint64_t *obj_off);
/* The piece of [off, off + len) that starts at off + pos (pos < len): inside one stripe
 * unit and at most IO_MAX bytes. Returns its length; *stripe and *obj_off say where it
 * lives. Walking pos from 0 by the returned lengths covers the range exactly once. */
uint64_t lode_client_stripe_piece(const struct lode_wire_layout *l, uint64_t off, uint64_t pos,
				  uint64_t len, unsigned *stripe, uint64_t *obj_off);

#endif
