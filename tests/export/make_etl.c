/*
 * A small ETW capture for the export tests, written with the ETL test writer
 * (tests/etl/etl_writer.h): FRAMES frames, each the scheduler's SelectContext,
 * a render packet and its DMA packet (start, interrupt, stop), a signal
 * packet on one context and a wait packet for it on another (with the unwait
 * and the stops), a CPU wait and its release, and every fourth frame a VSync.
 * The last frame's DMA packet never stops (a pending packet: an instant).
 *   nf-export-make-etl OUT.etl
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etl_writer.h"

#define FRAMES 12
#define FRAME_TICKS 11100 /* 1.11 ms at 10 MHz */
#define CPUS 2

enum { ADAPTER = 0xffff840589e16000ull };

static void ev(struct nf_etlw *w, uint16_t id, uint8_t ver, uint16_t cpu, uint32_t tid, int64_t t,
	       struct nf_etlw_buf *b)
{
	struct nf_etlw_event e;

	memset(&e, 0, sizeof(e));
	e.provider = &nf_etl_guid_dxgkrnl;
	e.id = id;
	e.version = ver;
	e.pid = 4;
	e.tid = tid;
	e.cpu = cpu;
	e.ticks = t;
	e.pointer_size = 8;
	e.payload = b->p;
	e.size = (uint32_t)b->n;
	if (nf_etlw_event(w, &e) != 0) {
		fprintf(stderr, "nf-export-make-etl: record does not fit\n");
		exit(1);
	}
	b->n = 0;
}

static void frame(struct nf_etlw *w, struct nf_etlw_buf *b, int64_t t, uint64_t f)
{
	const uint64_t ca = 0xffffd687eff87260ull, cb = 0xffffd6880b68f720ull;
	const uint64_t sync = 0xffff84058bc98250ull, sync2 = 0xffff84058928f910ull;
	uint64_t pq = 0xffff840590000000ull + f * 0x1000;
	uint16_t c0 = (uint16_t)(f % CPUS), c1 = (uint16_t)((f + 1) % CPUS);

	/* SelectContext (23) */
	nf_etlw_put_ptr(b, ADAPTER); nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 0);
	nf_etlw_put_u32(b, 0); nf_etlw_put_u64(b, 0); nf_etlw_put_u64(b, 0);
	ev(w, 23, 0, c0, 636, t, b);
	/* a render packet on context A (178) */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u64(b, 4096); nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0);
	nf_etlw_put_ptr(b, 0xffff840589ef5a40ull); nf_etlw_put_ptr(b, pq); nf_etlw_put_u64(b, 0);
	ev(w, 178, 1, c0, 640, t + 100, b);
	/* its DMA packet: start (175), interrupt (177), stop (176) */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f);
	nf_etlw_put_u32(b, (uint32_t)(3 * f)); nf_etlw_put_ptr(b, 0xffff840589ef5a40ull); nf_etlw_put_u32(b, 0);
	ev(w, 175, 1, c0, 636, t + 200, b);
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, 0); nf_etlw_put_u64(b, 0); nf_etlw_put_u32(b, 0);
	nf_etlw_put_ptr(b, 0);
	ev(w, 177, 1, c0, 640, t + 3000, b);
	if (f + 1 < FRAMES) {
		nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f);
		nf_etlw_put_u32(b, (uint32_t)(3 * f)); nf_etlw_put_u32(b, 0);
		ev(w, 176, 0, c0, 640, t + 3100, b);
	}
	/* the render packet's stop (180) */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_ptr(b, pq);
	ev(w, 180, 1, c0, 640, t + 3200, b);
	/* a signal packet on A (245), a wait packet on B for it (244), the unwait (238), stops */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, (uint32_t)(3 * f + 1)); nf_etlw_put_u32(b, 0);
	nf_etlw_put_u32(b, 1); nf_etlw_put_ptr(b, sync); nf_etlw_put_u64(b, f + 1); nf_etlw_put_ptr(b, pq + 8);
	ev(w, 245, 2, c0, 18680, t + 300, b);
	nf_etlw_put_ptr(b, cb); nf_etlw_put_u32(b, (uint32_t)(3 * f + 2)); nf_etlw_put_u32(b, 0);
	nf_etlw_put_ptr(b, sync); nf_etlw_put_u64(b, f + 1); nf_etlw_put_ptr(b, pq + 16);
	ev(w, 244, 1, c1, 18680, t + 400, b);
	nf_etlw_put_ptr(b, pq + 16); nf_etlw_put_ptr(b, cb);
	ev(w, 238, 0, c0, 4312, t + 3290, b);
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f + 1));
	nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_ptr(b, pq + 8);
	ev(w, 180, 1, c0, 640, t + 3300, b);
	nf_etlw_put_ptr(b, cb); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f + 2));
	nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_ptr(b, pq + 16);
	ev(w, 180, 1, c1, 640, t + 3400, b);
	/* a CPU wait (297) and its release (300) */
	nf_etlw_put_ptr(b, 0xffffd687dd4d8010ull); nf_etlw_put_u32(b, 1); nf_etlw_put_ptr(b, sync2);
	nf_etlw_put_u64(b, f + 1); nf_etlw_put_ptr(b, 0x65c); nf_etlw_put_u32(b, 0);
	ev(w, 297, 0, c1, 1428, t + 500, b);
	nf_etlw_put_ptr(b, 0xffff840589299dd0ull); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f + 1);
	nf_etlw_put_ptr(b, sync2); nf_etlw_put_u32(b, 0);
	ev(w, 300, 0, c0, 640, t + 3500, b);
	if (f % 4 == 0) {  /* VSyncDPC (17) */
		nf_etlw_put_ptr(b, ADAPTER); nf_etlw_put_u32(b, 0); nf_etlw_put_u64(b, 0); nf_etlw_put_u32(b, 0);
		nf_etlw_put_u32(b, (uint32_t)f); nf_etlw_put_u64(b, 0); nf_etlw_put_ptr(b, 0); nf_etlw_put_u32(b, 0);
		nf_etlw_put_u64(b, 0);
		ev(w, 17, 0, c0, 0, t + 5000, b);
	}
}

int main(int argc, char **argv)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	struct nf_etlw *w;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: nf-export-make-etl OUT.etl\n");
		return 2;
	}
	memset(&o, 0, sizeof(o));
	o.cpus = CPUS;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	if (!(w = nf_etlw_create(&o)))
		return 1;
	memset(&b, 0, sizeof(b));
	b.pointer_size = 8;
	for (uint64_t f = 0; f < FRAMES; f++)
		frame(w, &b, 1000 + (int64_t)f * FRAME_TICKS, f);
	nf_etlw_buf_free(&b);
	rc = nf_etlw_save(w, argv[1]);
	nf_etlw_destroy(w);
	if (rc != 0) {
		fprintf(stderr, "nf-export-make-etl: cannot write %s\n", argv[1]);
		return 1;
	}
	return 0;
}
