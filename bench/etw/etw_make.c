/*
 * The ETW import benchmark's synthetic capture: a block of frames shaped like
 * the gpuvis capture (per frame: the scheduler's SelectContext, a render
 * packet and its DMA packet with interrupt and stop, a signal packet on one
 * context and a wait packet for it on another with its unwait and stops, a
 * CPU wait and its release, every fourth frame a VSync, and two events of
 * another provider) is written once with the ETL test writer
 * (tests/etl/etl_writer.h), then its data buffers are streamed out again and
 * again with timestamps moved on and fence values raised, so that a capture
 * of any size is written in bounded memory. SCALE 1 has about as many events
 * as the gpuvis capture (211033).
 *   nfb_etw_make OUT.etl SCALE
 * Prints the number of events written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etl_writer.h"

#define FRAMES 1300          /* frames in the block: about 21100 events */
#define FRAME_TICKS 11100    /* 1.11 ms per frame at 10 MHz */
#define COPIES_PER_SCALE 10  /* blocks per scale unit */
#define CPUS 4

static const struct nf_etl_guid other = { 0x8f8f13b1, 0x60eb, 0x4b6a,
					  { 0xa4, 0x33, 0xde, 0x86, 0x10, 0x41, 0x15, 0xac } };

static uint64_t n_events;

static void ev(struct nf_etlw *w, uint16_t id, uint8_t ver, uint16_t cpu, uint32_t tid, int64_t t,
	       struct nf_etlw_buf *b, const struct nf_etl_guid *g)
{
	struct nf_etlw_event e;

	memset(&e, 0, sizeof(e));
	e.provider = g;
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
		fprintf(stderr, "nfb_etw_make: record does not fit\n");
		exit(1);
	}
	n_events++;
	b->n = 0;
}

enum { ADAPTER = 0xffff840589e16000ull };

static void frame(struct nf_etlw *w, struct nf_etlw_buf *b, int64_t t, uint64_t f)
{
	const uint64_t ca = 0xffffd687eff87260ull, cb = 0xffffd6880b68f720ull;
	const uint64_t sync = 0xffff84058bc98250ull, sync2 = 0xffff84058928f910ull;
	uint64_t pq = 0xffff840590000000ull + (f % 64) * 0x1000;
	uint16_t c0 = (uint16_t)(f % CPUS), c1 = (uint16_t)((f + 1) % CPUS);

	/* SelectContext */
	nf_etlw_put_ptr(b, ADAPTER); nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 0);
	nf_etlw_put_u32(b, 0); nf_etlw_put_u64(b, 0); nf_etlw_put_u64(b, 0);
	ev(w, 23, 0, c0, 636, t, b, &nf_etl_guid_dxgkrnl);
	/* render packet on A */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u64(b, 4096); nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0);
	nf_etlw_put_ptr(b, 0xffff840589ef5a40ull); nf_etlw_put_ptr(b, pq); nf_etlw_put_u64(b, 0);
	ev(w, 178, 1, c0, 640, t + 100, b, &nf_etl_guid_dxgkrnl);
	/* its DMA packet: start, interrupt, stop */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f);
	nf_etlw_put_u32(b, (uint32_t)(3 * f)); nf_etlw_put_ptr(b, 0xffff840589ef5a40ull); nf_etlw_put_u32(b, 0);
	ev(w, 175, 1, c0, 636, t + 200, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, 0); nf_etlw_put_u64(b, 0); nf_etlw_put_u32(b, 0);
	nf_etlw_put_ptr(b, 0);
	ev(w, 177, 1, c0, 640, t + 3000, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u32(b, 0);
	ev(w, 176, 0, c0, 640, t + 3100, b, &nf_etl_guid_dxgkrnl);
	/* render packet stop */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f));
	nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_ptr(b, pq);
	ev(w, 180, 1, c0, 640, t + 3200, b, &nf_etl_guid_dxgkrnl);
	/* signal packet on A, wait packet on B for it */
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, (uint32_t)(3 * f + 1)); nf_etlw_put_u32(b, 0);
	nf_etlw_put_u32(b, 1); nf_etlw_put_ptr(b, sync); nf_etlw_put_u64(b, f + 1); nf_etlw_put_ptr(b, pq + 8);
	ev(w, 245, 2, c0, 18680, t + 300, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, cb); nf_etlw_put_u32(b, (uint32_t)(3 * f + 2)); nf_etlw_put_u32(b, 0);
	nf_etlw_put_ptr(b, sync); nf_etlw_put_u64(b, f + 1); nf_etlw_put_ptr(b, pq + 16);
	ev(w, 244, 1, c1, 18680, t + 400, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, pq + 16); nf_etlw_put_ptr(b, cb);
	ev(w, 238, 0, c0, 4312, t + 3290, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, ca); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f + 1));
	nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_ptr(b, pq + 8);
	ev(w, 180, 1, c0, 640, t + 3300, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, cb); nf_etlw_put_u32(b, 1); nf_etlw_put_u32(b, (uint32_t)(3 * f + 2));
	nf_etlw_put_u32(b, 0); nf_etlw_put_u32(b, 0); nf_etlw_put_ptr(b, pq + 16);
	ev(w, 180, 1, c1, 640, t + 3400, b, &nf_etl_guid_dxgkrnl);
	/* a CPU wait and its release */
	nf_etlw_put_ptr(b, 0xffffd687dd4d8010ull); nf_etlw_put_u32(b, 1); nf_etlw_put_ptr(b, sync2);
	nf_etlw_put_u64(b, f + 1); nf_etlw_put_ptr(b, 0x65c); nf_etlw_put_u32(b, 0);
	ev(w, 297, 0, c1, 1428, t + 500, b, &nf_etl_guid_dxgkrnl);
	nf_etlw_put_ptr(b, 0xffff840589299dd0ull); nf_etlw_put_u32(b, 1); nf_etlw_put_u64(b, f + 1);
	nf_etlw_put_ptr(b, sync2); nf_etlw_put_u32(b, 0);
	ev(w, 300, 0, c0, 640, t + 3500, b, &nf_etl_guid_dxgkrnl);
	if (f % 4 == 0) {
		nf_etlw_put_ptr(b, ADAPTER); nf_etlw_put_u32(b, 0); nf_etlw_put_u64(b, 0); nf_etlw_put_u32(b, 0);
		nf_etlw_put_u32(b, (uint32_t)f); nf_etlw_put_u64(b, 0); nf_etlw_put_ptr(b, 0); nf_etlw_put_u32(b, 0);
		nf_etlw_put_u64(b, 0);
		ev(w, 17, 0, c0, 0, t + 5000, b, &nf_etl_guid_dxgkrnl);
	}
	for (int k = 0; k < 2; k++) {
		nf_etlw_put_u64(b, f);
		nf_etlw_put_u64(b, (uint64_t)k);
		ev(w, 1, 0, c1, 14808, t + 6000 + k * 100, b, &other);
	}
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static int64_t rd64(const uint8_t *p) { return (int64_t)((uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32); }
static void wr64(uint8_t *p, int64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)((uint64_t)v >> (8 * i));
}

int main(int argc, char **argv)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b;
	const uint8_t *data;
	size_t size;
	long scale;
	FILE *out;

	if (argc != 3 || (scale = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: nfb_etw_make OUT.etl SCALE\n");
		return 2;
	}
	memset(&o, 0, sizeof(o));
	o.cpus = CPUS;
	o.buffer_size = 65536;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	struct nf_etlw *w = nf_etlw_create(&o);

	memset(&b, 0, sizeof(b));
	b.pointer_size = 8;
	for (uint64_t f = 0; f < FRAMES; f++)
		frame(w, &b, 1000 + (int64_t)f * FRAME_TICKS, f);
	nf_etlw_buf_free(&b);
	if (nf_etlw_finish(w, &data, &size) != 0 || !(out = fopen(argv[1], "wb"))) {
		fprintf(stderr, "nfb_etw_make: cannot write %s\n", argv[1]);
		return 1;
	}
	/* The logfile header buffer once, then the data buffers block after
	 * block, moved on in time (record timestamps at offset 16 of every
	 * EVENT_HEADER, the buffer's own at 0x10), fence values raised by the
	 * frames before (so every wait is released by its own block's signal). */
	uint32_t bs = o.buffer_size;
	uint8_t *buf = malloc(bs);
	size_t first = (size_t)nf_etlw_buffer_offset(w, 1);
	long copies = scale * COPIES_PER_SCALE;

	if (!buf || fwrite(data, 1, first, out) != first)
		return 1;
	for (long c = 0; c < copies; c++) {
		int64_t shift = (int64_t)c * FRAMES * FRAME_TICKS;

		for (size_t off = first; off + bs <= size; off += bs) {
			memcpy(buf, data + off, bs);
			uint32_t end = rd32(buf + 0x30);

			wr64(buf + 0x10, rd64(buf + 0x10) + shift);
			for (uint32_t p = 72; p + 24 <= end && p + 24 <= bs;) {
				uint16_t sz = rd16(buf + p);

				if (buf[p + 2] == 0x13) {
					wr64(buf + p + 16, rd64(buf + p + 16) + shift);
					/* Fence values go on growing from block to block
					 * (payload after the 80-byte header: no extended data here). */
					uint16_t id = rd16(buf + p + 40);
					uint32_t at = id == 245 ? 28 : id == 244 ? 24 : id == 297 ? 20 : id == 300 ? 12 : 0;

					if (at && 80u + at + 8 <= sz)
						wr64(buf + p + 80 + at, rd64(buf + p + 80 + at) + (int64_t)c * FRAMES);
				}
				if (sz == 0)
					break;
				p += (uint32_t)(sz + 7) & ~7u;
			}
			if (fwrite(buf, 1, bs, out) != bs)
				return 1;
		}
	}
	free(buf);
	if (fclose(out) != 0)
		return 1;
	printf("%llu\n", (unsigned long long)n_events * (unsigned long long)copies);
	nf_etlw_destroy(w);
	return 0;
}
