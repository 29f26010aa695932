/* SPDX-License-Identifier: MIT */
/* liblode: the striping formula, offsets and ranges to stripes and object offsets. */
#include "stripe.h"

uint64_t lode_client_object_size(const struct lode_wire_layout *l, uint64_t file_size,
				 unsigned stripe)
{
	uint64_t ss = l->stripe_size, row = ss * l->stripe_count;
	uint64_t full = file_size / row, rem = file_size % row;
	uint64_t part = rem > (uint64_t)stripe * ss ? rem - (uint64_t)stripe * ss : 0;

	return full * ss + (part < ss ? part : ss);
}

/* Where file offset `off` lives: stripe index and offset inside that stripe's object. */
void lode_client_stripe_map(const struct lode_wire_layout *l, uint64_t off, unsigned *stripe,
			    uint64_t *obj_off)
{
	uint64_t unit = off / l->stripe_size;

	*stripe = (unsigned)(unit % l->stripe_count);
	*obj_off = (unit / l->stripe_count) * l->stripe_size + off % l->stripe_size;
}

/* The piece of [off, off + len) that starts at off + pos: inside one stripe unit and at most
 * IO_MAX bytes. Returns its length; *stripe and *obj_off say where it lives. */
uint64_t lode_client_stripe_piece(const struct lode_wire_layout *l, uint64_t off, uint64_t pos,
				  uint64_t len, unsigned *stripe, uint64_t *obj_off)
{
	uint64_t file_off = off + pos, in_unit = l->stripe_size - file_off % l->stripe_size;
	uint64_t n = len - pos;

	lode_client_stripe_map(l, file_off, stripe, obj_off);
	if (n > in_unit)
		n = in_unit;
	return n < IO_MAX ? n : IO_MAX;
}
