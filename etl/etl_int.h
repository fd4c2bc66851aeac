/*
 * etl/'s private helpers shared by the reader and the DxgKrnl decoder:
 * little-endian loads from untrusted bytes (no alignment assumed) and
 * UTF-16 to UTF-8 conversion.
 */
#ifndef NF_ETL_INT_H
#define NF_ETL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t etl_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t etl_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v; /* little-endian host (x86_64, aarch64): checked in reader.c */
}

static inline uint64_t etl_u64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline int64_t etl_i64(const uint8_t *p)
{
	return (int64_t)etl_u64(p);
}

/* Converts n bytes of UTF-16LE (stopping at a NUL unit) to UTF-8 in out
 * (cap bytes, NUL-terminated when cap > 0; truncated on a character
 * boundary). Unpaired surrogates become U+FFFD. Returns bytes written. */
size_t nf_etl_utf16_to_utf8(const uint8_t *p, size_t n, char *out, size_t cap);

#endif
