/* The capture of etl_fixture.h. Layouts as Microsoft-Windows-DxgKrnl logs
 * them (schemas/dxgkrnl.def), 64-bit pointers, 100 ns per tick from 1000. */
#include "etl_fixture.h"

#include "etl_writer.h"

#include <string.h>

enum { ADAPTER = 0xA000, DEVICE = 0xDE0, SYNC = 0x5000 };

struct fx {
	struct nf_etlw *w;
	struct nf_etlw_buf b;
	int failed;
};

static void dxg(struct fx *x, uint16_t id, uint8_t version, uint32_t tid, int64_t ticks)
{
	struct nf_etlw_event e;

	memset(&e, 0, sizeof(e));
	e.provider = &nf_etl_guid_dxgkrnl;
	e.id = id;
	e.version = version;
	e.pid = 4;
	e.tid = tid;
	e.ticks = ticks;
	e.pointer_size = 8;
	e.payload = x->b.p;
	e.size = (uint32_t)x->b.n;
	if (nf_etlw_event(x->w, &e))
		x->failed = 1;
	nf_etlw_buf_free(&x->b);
	x->b.pointer_size = 8;
}

/* A UTF-8 string as NUL-terminated UTF-16 (what ETW strings are). */
static void put_utf16(struct nf_etlw_buf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		uint32_t c = *u++;
		int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;

		c &= more == 3 ? 0x07 : more == 2 ? 0x0F : more == 1 ? 0x1F : 0x7F;
		while (more-- > 0 && *u)
			c = c << 6 | (*u++ & 0x3Fu);
		if (c >= 0x10000) {
			nf_etlw_put_u16(b, (uint16_t)(0xD800 + ((c - 0x10000) >> 10)));
			nf_etlw_put_u16(b, (uint16_t)(0xDC00 + ((c - 0x10000) & 0x3FF)));
		} else {
			nf_etlw_put_u16(b, (uint16_t)c);
		}
	}
	nf_etlw_put_u16(b, 0);
}

/* The NT kernel's process record (Process_V4): its image name is bytes. */
static void process_record(struct fx *x, int64_t ticks, uint32_t pid, const char *image)
{
	struct nf_etlw_classic c;
	static const uint8_t sid[12] = { 1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0 };

	nf_etlw_put_ptr(&x->b, 0xffff800012345678ull);
	nf_etlw_put_u32(&x->b, pid);
	nf_etlw_put_u32(&x->b, 4);
	nf_etlw_put_u32(&x->b, 1);
	nf_etlw_put_u32(&x->b, 259);
	nf_etlw_put_ptr(&x->b, 0x1aa000);
	nf_etlw_put_u32(&x->b, 0);
	nf_etlw_put_ptr(&x->b, 0xffff800087654321ull);
	nf_etlw_put_ptr(&x->b, 0);
	nf_etlw_put_bytes(&x->b, sid, sizeof(sid));
	nf_etlw_put_bytes(&x->b, image, strlen(image) + 1);
	put_utf16(&x->b, image); /* the command line */
	memset(&c, 0, sizeof(c));
	c.kind = NF_ETL_HDR_SYSTEM;
	c.hook_id = 0x0303;
	c.version = 4;
	c.ticks = ticks;
	c.payload = x->b.p;
	c.size = (uint32_t)x->b.n;
	if (nf_etlw_classic(x->w, &c))
		x->failed = 1;
	nf_etlw_buf_free(&x->b);
	x->b.pointer_size = 8;
}

int etl_fixture_write(const char *path, const struct etl_fixture *f)
{
	struct nf_etlw_options o;
	struct fx x = { .b = { .pointer_size = 8 } };
	uint32_t nodes = (uint32_t)f->n_nodes + (f->lone_surrogates ? 1 : 0);
	int64_t t = 1100;
	int rc;

	memset(&o, 0, sizeof(o));
	o.cpus = 2;
	o.perf_freq = 10000000;
	o.header_ticks = 1000;
	if (!nodes || !(x.w = nf_etlw_create(&o)))
		return -1;
	/* DeviceDCStart: process 1234's device on the adapter, then its image name */
	nf_etlw_put_ptr(&x.b, 1234);
	nf_etlw_put_ptr(&x.b, ADAPTER);
	nf_etlw_put_u32(&x.b, 0);
	nf_etlw_put_ptr(&x.b, DEVICE);
	nf_etlw_put_u32(&x.b, 0);
	nf_etlw_put_u32(&x.b, 0);
	nf_etlw_put_u32(&x.b, 0);
	nf_etlw_put_ptr(&x.b, 0);
	nf_etlw_put_u32(&x.b, 0);
	nf_etlw_put_ptr(&x.b, 0);
	dxg(&x, 29, 2, 0, 1010);
	process_record(&x, 1015, 1234, f->image ? f->image : "app.exe");
	for (uint32_t n = 0; n < nodes; n++) {
		/* NodeMetadata: adapter, ordinal, engine type, FriendlyName */
		nf_etlw_put_ptr(&x.b, ADAPTER);
		nf_etlw_put_u32(&x.b, n);
		nf_etlw_put_u32(&x.b, 1);
		if (n < f->n_nodes) {
			put_utf16(&x.b, f->node_names[n]);
		} else { /* a lone high surrogate, then a lone low one */
			nf_etlw_put_u16(&x.b, 0xD800);
			nf_etlw_put_u16(&x.b, 'x');
			nf_etlw_put_u16(&x.b, 0xDC00);
			nf_etlw_put_u16(&x.b, 0);
		}
		dxg(&x, 250, 0, 0, t++);
		/* ContextDCStart: the device's context on that node */
		nf_etlw_put_ptr(&x.b, DEVICE);
		nf_etlw_put_u32(&x.b, n);
		for (int k = 0; k < 7; k++)
			nf_etlw_put_u32(&x.b, 0);
		nf_etlw_put_ptr(&x.b, 0xC00 + (uint64_t)n);
		nf_etlw_put_ptr(&x.b, 0);
		nf_etlw_put_ptr(&x.b, 0);
		dxg(&x, 32, 0, 0, t++);
	}
	if (f->early_ticks < 0) {
		/* node 0's signal releases node 1's context, packet 0x9001 */
		nf_etlw_put_ptr(&x.b, 0x9001);
		nf_etlw_put_ptr(&x.b, 0xC00 + (uint64_t)(1 % nodes));
		dxg(&x, 238, 0, 0, f->early_ticks);
	}
	for (uint32_t n = 0; n < nodes; n++) {
		uint64_t ctx = 0xC00 + (uint64_t)n, next = 0xC00 + (uint64_t)((n + 1) % nodes), pq = 0x9000 + 2 * (uint64_t)n;

		t += 100;
		/* a signal of SYNC to n + 1 (245), the next context's wait for it (244) */
		nf_etlw_put_ptr(&x.b, ctx);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_u32(&x.b, 0);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_ptr(&x.b, SYNC);
		nf_etlw_put_u64(&x.b, n + 1);
		nf_etlw_put_ptr(&x.b, pq);
		dxg(&x, 245, 2, 700, t);
		nf_etlw_put_ptr(&x.b, next);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_u32(&x.b, 0);
		nf_etlw_put_ptr(&x.b, SYNC);
		nf_etlw_put_u64(&x.b, n + 1);
		nf_etlw_put_ptr(&x.b, pq + 1);
		dxg(&x, 244, 1, 700, t + 10);
		/* a DMA packet (175 .. 176) */
		nf_etlw_put_ptr(&x.b, ctx);
		nf_etlw_put_ptr(&x.b, ctx);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_u64(&x.b, 100 + n);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_ptr(&x.b, 0xD0D0);
		nf_etlw_put_u32(&x.b, 0);
		dxg(&x, 175, 1, 0, t + 20);
		nf_etlw_put_ptr(&x.b, ctx);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_u64(&x.b, 100 + n);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_u32(&x.b, 0);
		dxg(&x, 176, 0, 0, t + 40);
		/* the signal stops (180), the wait is released (238) and stops */
		for (int k = 0; k < 2; k++) {
			if (k) {
				nf_etlw_put_ptr(&x.b, pq + 1);
				nf_etlw_put_ptr(&x.b, next);
				dxg(&x, 238, 0, 0, t + 55);
			}
			nf_etlw_put_ptr(&x.b, k ? next : ctx);
			nf_etlw_put_u32(&x.b, 1);
			nf_etlw_put_u32(&x.b, 1);
			nf_etlw_put_u32(&x.b, 0);
			nf_etlw_put_u32(&x.b, 0);
			nf_etlw_put_ptr(&x.b, pq + (uint64_t)k);
			dxg(&x, 180, 1, 0, t + 50 + 10 * k);
		}
	}
	if (f->last_ticks > 0) {
		/* a VSync (17) stamped there */
		nf_etlw_put_ptr(&x.b, ADAPTER);
		nf_etlw_put_u32(&x.b, 0);
		nf_etlw_put_u64(&x.b, 0);
		nf_etlw_put_u32(&x.b, 0);
		nf_etlw_put_u32(&x.b, 1);
		nf_etlw_put_u64(&x.b, 0);
		nf_etlw_put_ptr(&x.b, 0);
		nf_etlw_put_u32(&x.b, 0);
		nf_etlw_put_u64(&x.b, 0);
		dxg(&x, 17, 0, 0, f->last_ticks);
	}
	rc = x.failed ? -1 : nf_etlw_save(x.w, path);
	nf_etlw_destroy(x.w);
	return rc ? -1 : 0;
}
