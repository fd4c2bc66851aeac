/*
 * The ETW capture of html_etl.h. Event layouts as Microsoft-Windows-DxgKrnl
 * logs them (schemas/dxgkrnl.def), 64-bit pointers:
 *   SelectContext (23) puts context A on node 0 and context B on node 1;
 *   A signals sync object S to 5 (245 at 20 us, its stop 180 at 61 us); B
 *   waits for S >= 5 (244 at 30 us, unwait 238 at 60 us, stop at 62 us);
 *   DMA packets (175 start, 176 stop): 77 on A from 40 to 51 us, 78 on A from
 *   52 to 58 us, 90 on B from 63 to 70 us; VSyncs (17) at 100 and 116.6 us.
 */
#include "html_etl.h"

#include "etl_writer.h"

#include <string.h>

enum { ADAPTER = 0xA000, CTX_A = 0xC0A, CTX_B = 0xC0B, SYNC = 0x5000, PQ1 = 0x9001, PQ2 = 0x9002 };

static int dxg(struct nf_etlw *w, uint16_t id, uint8_t version, uint16_t cpu, uint32_t tid, int64_t ticks,
	       struct nf_etlw_buf *b)
{
	struct nf_etlw_event e;
	int rc;

	memset(&e, 0, sizeof(e));
	e.provider = &nf_etl_guid_dxgkrnl;
	e.id = id;
	e.version = version;
	e.pid = 4;
	e.tid = tid;
	e.cpu = cpu;
	e.ticks = ticks;
	e.pointer_size = 8;
	e.payload = b->p;
	e.size = (uint32_t)b->n;
	rc = nf_etlw_event(w, &e);
	nf_etlw_buf_free(b);
	memset(b, 0, sizeof(*b));
	b->pointer_size = 8;
	return rc;
}

static int select_context(struct nf_etlw *w, int64_t t, uint64_t ctx, uint32_t node)
{
	struct nf_etlw_buf b = { .pointer_size = 8 };

	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, node);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_u64(&b, 0);
	return dxg(w, 23, 0, 0, 0, t, &b);
}

static int dma_packet(struct nf_etlw *w, int64_t start, int64_t stop, uint64_t ctx, uint64_t submission)
{
	struct nf_etlw_buf b = { .pointer_size = 8 };

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, submission);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_ptr(&b, 0xD0D0);
	nf_etlw_put_u32(&b, 0);
	if (dxg(w, 175, 1, 0, 0, start, &b))
		return -1;
	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u64(&b, submission);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 0);
	return dxg(w, 176, 0, 0, 0, stop, &b);
}

static int vsync(struct nf_etlw *w, int64_t t, uint32_t frame)
{
	struct nf_etlw_buf b = { .pointer_size = 8 };

	nf_etlw_put_ptr(&b, ADAPTER);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, frame);
	nf_etlw_put_u64(&b, 0);
	nf_etlw_put_ptr(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u64(&b, 0);
	return dxg(w, 17, 0, 0, 0, t, &b);
}

static int packet_stop(struct nf_etlw *w, int64_t t, uint16_t cpu, uint64_t ctx, uint32_t seq, uint64_t pq)
{
	struct nf_etlw_buf b = { .pointer_size = 8 };

	nf_etlw_put_ptr(&b, ctx);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, seq);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, pq);
	return dxg(w, 180, 1, cpu, 0, t, &b);
}

int html_etl_write(const char *path)
{
	struct nf_etlw_options o;
	struct nf_etlw_buf b = { .pointer_size = 8 };
	struct nf_etlw *w;
	int rc = 0;

	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000; /* 100 ns per tick */
	o.header_ticks = 1000;
	if (!(w = nf_etlw_create(&o)))
		return -1;
	rc |= select_context(w, 1000, CTX_A, 0);
	rc |= select_context(w, 1010, CTX_B, 1);
	/* A signals S to 5 (245) */
	nf_etlw_put_ptr(&b, CTX_A);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_ptr(&b, SYNC);
	nf_etlw_put_u64(&b, 5);
	nf_etlw_put_ptr(&b, PQ1);
	rc |= dxg(w, 245, 2, 0, 100, 1200, &b);
	/* B waits for S >= 5 (244) */
	nf_etlw_put_ptr(&b, CTX_B);
	nf_etlw_put_u32(&b, 1);
	nf_etlw_put_u32(&b, 0);
	nf_etlw_put_ptr(&b, SYNC);
	nf_etlw_put_u64(&b, 5);
	nf_etlw_put_ptr(&b, PQ2);
	rc |= dxg(w, 244, 1, 1, 200, 1300, &b);
	rc |= dma_packet(w, 1400, 1510, CTX_A, 77);
	rc |= dma_packet(w, 1520, 1580, CTX_A, 78);
	/* the unwait (238), then both packets stop */
	nf_etlw_put_ptr(&b, PQ2);
	nf_etlw_put_ptr(&b, CTX_B);
	rc |= dxg(w, 238, 0, 1, 0, 1600, &b);
	rc |= packet_stop(w, 1610, 0, CTX_A, 1, PQ1);
	rc |= packet_stop(w, 1620, 1, CTX_B, 1, PQ2);
	rc |= dma_packet(w, 1630, 1700, CTX_B, 90);
	rc |= vsync(w, 2000, 42);
	rc |= vsync(w, 2166, 43);
	if (!rc)
		rc = nf_etlw_save(w, path);
	nf_etlw_destroy(w);
	return rc ? -1 : 0;
}
