/*
 * Linux display flips of the kernel stream (KernelFlip: i915_flip_request and
 * i915_flip_complete) into displays, presents and flips, and each CRTC's
 * vblanks tied to its display (schemas/timeline.sql, "Displays, presents,
 * flips and frames"). Held in memory while the events stream (a flip is two
 * small records), written at finish.
 */
#ifndef NF_IMPORTERS_KERNEL_FLIPS_H
#define NF_IMPORTERS_KERNEL_FLIPS_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "contract/errors.h"

struct nf_kflip_rec {
	int64_t ns;
	int64_t tid;
	int32_t plane;
	uint64_t obj;
	int kind;      /* 1 request, 2 complete */
};

struct nf_kflips {
	struct nf_kflip_rec *v;
	size_t n, cap;
};

/* Holds one flip event; 0 or NF_ENOMEM (more than 16 M flips: refused). */
int nf_kflips_add(struct nf_kflips *k, int64_t ns, int64_t tid, int32_t plane, uint64_t obj, int kind,
		  struct nf_error *err);

/*
 * Writes the displays (one per CRTC of the vblanks and per plane of the
 * flips), the presents and flips (each request paired with the next
 * completion of the same plane and framebuffer object; its vblank the one of
 * that CRTC at or after the completion within 1 ms) and sets vblanks.display.
 * Runs after the vblanks are loaded. 0 or NF_ESQL, NF_ENOMEM.
 */
int nf_kflips_write(struct nf_kflips *k, sqlite3 *db, struct nf_error *err);

void nf_kflips_free(struct nf_kflips *k);

#endif
