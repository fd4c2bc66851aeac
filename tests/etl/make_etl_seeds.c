/*
 * nf-make-etl-seeds DIR: writes the seed corpus of fuzz_etl (tests/etl/corpus/etl)
 * with the ETL test writer: every header type, both pointer sizes, every
 * DxgKrnl event of the table, small buffers merged by time, buffer flags.
 * The files are committed; this program regenerates them.
 */
#include <stdio.h>
#include <string.h>

#include "etl_writer.h"

static const struct nf_etl_guid other = {0x8f8f13b1, 0x60eb, 0x4b6a, {0xa4, 0x33, 0xde, 0x86, 0x10, 0x41, 0x15, 0xac}};

static int save(struct nf_etlw *w, const char *dir, const char *name)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int rc = nf_etlw_save(w, path);
	nf_etlw_destroy(w);
	if (rc < 0)
		fprintf(stderr, "nf-make-etl-seeds: cannot write %s\n", path);
	return rc;
}

static int headers(const char *dir, unsigned ps)
{
	struct nf_etlw_options o = {.buffer_size = 1024, .header_pointer_size = ps};
	struct nf_etlw *w = nf_etlw_create(&o);
	const uint8_t pl[] = {1, 2, 3, 4, 5, 6, 7, 8};
	const uint8_t schema[] = {12, 0, 0, 'M', 'a', 'r', 'k', 0, 'x', 0, 0, 0};
	const uint8_t traits[] = {6, 0, 'V', 'R', 0, 0};
	const struct nf_etlw_ext ext[] = {{11, schema, sizeof(schema)}, {12, traits, sizeof(traits)}};
	struct nf_etlw_event e = {.provider = &other, .id = 1, .cpu = 0, .ticks = 2000, .pointer_size = ps,
				  .ext = ext, .ext_n = 2, .payload = pl, .size = 8};
	nf_etlw_event(w, &e);
	struct nf_etlw_classic c = {.kind = NF_ETL_HDR_SYSTEM, .pointer_size = ps, .hook_id = 0x0524, .cpu = 1,
				    .ticks = 2100, .payload = pl, .size = 8};
	nf_etlw_classic(w, &c);
	c.kind = NF_ETL_HDR_COMPACT; c.hook_id = 0x0301; c.ticks = 2200;
	nf_etlw_classic(w, &c);
	c.kind = NF_ETL_HDR_PERFINFO; c.hook_id = 0x0F2E; c.ticks = 2300;
	nf_etlw_classic(w, &c);
	struct nf_etlw_full f = {.kind = NF_ETL_HDR_FULL, .pointer_size = ps, .guid = &other, .cpu = 2,
				 .ticks = 2400, .payload = pl, .size = 8};
	nf_etlw_full(w, &f);
	f.kind = NF_ETL_HDR_INSTANCE; f.ticks = 2500;
	nf_etlw_full(w, &f);
	uint8_t timed[16] = {16, 0, 0x0C, 0xC0, 1, 0, 0, 0, 0xc4, 0x09};
	nf_etlw_raw(w, 2, timed, sizeof(timed));
	uint8_t msg[12] = {12, 0, 0x0F, 0xC0};
	nf_etlw_raw(w, 2, msg, sizeof(msg));
	nf_etlw_flag(w, 2, 0x2);
	return save(w, dir, ps == 4 ? "headers32.etl" : "headers64.etl");
}

static int dxgkrnl(const char *dir, unsigned ps)
{
	struct nf_etlw_options o = {.buffer_size = 1024, .header_pointer_size = 4};
	struct nf_etlw *w = nf_etlw_create(&o);
	int64_t t = 2000;
	for (int ev = 1; ev < NF_DXG_EV_COUNT; ev++) {
		const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(ev);
		struct nf_etlw_buf b = {.pointer_size = ps};
		for (uint32_t i = 0; i < ei->nfields; i++) {
			const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
			switch (fi->type) {
			case NF_DXG_U8: nf_etlw_put_u8(&b, 1); break;
			case NF_DXG_U16: nf_etlw_put_u16(&b, 1); break;
			case NF_DXG_U32: case NF_DXG_I32: case NF_DXG_BOOL: nf_etlw_put_u32(&b, 1); break;
			case NF_DXG_U64: case NF_DXG_I64: nf_etlw_put_u64(&b, 7); break;
			case NF_DXG_PTR: nf_etlw_put_ptr(&b, 0xffff8405899e6000ull); break;
			case NF_DXG_GUID: nf_etlw_put_bytes(&b, &other, 16); break;
			case NF_DXG_WSTR: nf_etlw_put_wstr(&b, "3D"); break;
			case NF_DXG_BIN: nf_etlw_put_u8(&b, 0xab); break;
			case NF_DXG_PTR_ARRAY: nf_etlw_put_ptr(&b, 0xffff840589ef2a60ull); break;
			case NF_DXG_U64_ARRAY: nf_etlw_put_u64(&b, 42); break;
			}
		}
		struct nf_etlw_event e = {.provider = &nf_etl_guid_dxgkrnl, .id = ei->id, .version = ei->max_version,
					  .cpu = (uint16_t)(ev % 3), .ticks = t++, .pointer_size = ps,
					  .payload = b.p, .size = (uint32_t)b.n};
		nf_etlw_event(w, &e);
		nf_etlw_buf_free(&b);
	}
	return save(w, dir, ps == 4 ? "dxgkrnl32.etl" : "dxgkrnl64.etl");
}

static int merge(const char *dir)
{
	struct nf_etlw_options o = {.buffer_size = 1024, .clock_type = NF_ETL_CLOCK_SYSTEM};
	struct nf_etlw *w = nf_etlw_create(&o);
	uint8_t pl[16] = {0};
	for (uint32_t i = 0; i < 60; i++) {
		struct nf_etlw_event e = {.provider = &nf_etl_guid_dxgkrnl, .id = 238, .cpu = (uint16_t)(i % 3),
					  .ticks = 2000 + i, .payload = pl, .size = 16};
		nf_etlw_event(w, &e);
	}
	return save(w, dir, "merge.etl");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: nf-make-etl-seeds DIR\n");
		return 2;
	}
	int rc = headers(argv[1], 4) | headers(argv[1], 8) | dxgkrnl(argv[1], 4) | dxgkrnl(argv[1], 8) |
		 merge(argv[1]);
	return rc ? 1 : 0;
}
