/* SPDX-License-Identifier: MIT */
/*
 * Capability keys, signatures and checks (cap.h says what and why): keyed BLAKE2b from
 * libsodium, compared with sodium_memcmp.
 */
#include "cap.h"

#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#define CAP_LABEL  "lode capability v1"
#define CAP_SIGNED offsetof(struct lode_wire_cap, mac)

_Static_assert(CAP_SIGNED == 32, "the mac covers every field before it");

void lode_cap_key_derive(const uint8_t cluster[LODE_KEY_BYTES], uint8_t out[LODE_KEY_BYTES])
{
	crypto_generichash(out, LODE_KEY_BYTES, (const unsigned char *)CAP_LABEL,
			   sizeof(CAP_LABEL) - 1, cluster, LODE_KEY_BYTES);
}

static void mac(const uint8_t key[LODE_KEY_BYTES], const struct lode_wire_cap *cap, uint8_t out[32])
{
	crypto_generichash(out, 32, (const unsigned char *)cap, CAP_SIGNED, key, LODE_KEY_BYTES);
}

void lode_cap_sign(const uint8_t key[LODE_KEY_BYTES], struct lode_wire_cap *cap)
{
	mac(key, cap, cap->mac);
}

int lode_cap_check(const uint8_t key[LODE_KEY_BYTES], const struct lode_wire_cap *cap, uint64_t ino,
		   uint64_t generation, uint32_t rights, uint64_t now_ms)
{
	uint8_t want[32];
	bool genuine;

	mac(key, cap, want);
	genuine = sodium_memcmp(want, cap->mac, sizeof(want)) == 0;
	sodium_memzero(want, sizeof(want));
	return genuine ? lode_cap_check_fields(cap, ino, generation, rights, now_ms) : -EACCES;
}

int lode_cap_check_fields(const struct lode_wire_cap *cap, uint64_t ino, uint64_t generation,
			  uint32_t rights, uint64_t now_ms)
{
	if (cap->reserved || cap->ino != ino || cap->generation != generation ||
	    (cap->rights & rights) != rights)
		return -EACCES;
	return now_ms >= cap->expiry_ms ? -EKEYEXPIRED : 0;
}

uint64_t lode_cap_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
