/*
 * Fuzz target: an ETL file through etl/ — the open (buffer index, logfile
 * header), the walk of every record in time order and in file order, the
 * extended data and TraceLogging helpers, the DxgKrnl decoder on every
 * DxgKrnl record and its field accessors — and the decoder alone on the
 * input read as (id, version, pointer size, payload). Errors are fine;
 * crashes, sanitizer reports and broken invariants are not.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/etl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every field of a decoded record (the accessors check bounds). */
static uint64_t touch(const struct nf_etl_dxg_record *rec)
{
	const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(rec->event);
	uint64_t h = 0;
	if (!ei || rec->nfields != ei->nfields)
		abort();
	for (uint32_t i = 0; i < rec->nfields; i++) {
		if (!rec->f[i].present)
			continue;
		int type = ei->fields[i].type;
		if (type == NF_DXG_PTR_ARRAY || type == NF_DXG_U64_ARRAY) {
			for (uint32_t k = 0; k < rec->f[i].u; k++)
				h += nf_etl_dxg_elem(rec, i, k);
		} else if (type == NF_DXG_WSTR) {
			char s[64];
			h += nf_etl_dxg_wstr(rec, i, s, sizeof(s));
		} else if (type == NF_DXG_BIN || type == NF_DXG_GUID) {
			for (uint64_t k = 0; k < rec->f[i].u; k++)
				h += rec->f[i].p[k];
		} else {
			h += rec->f[i].u;
		}
	}
	return h;
}

static void walk(const uint8_t *data, size_t size, unsigned flags)
{
	struct nf_etl_reader *r;
	struct nf_error err = {0};
	if (nf_etl_reader_open_mem(data, size, "fuzz.etl", flags | NF_ETL_DECODE_DXGKRNL, &r, &err) < 0) {
		if (err.code == NF_OK || !err.msg[0])
			abort(); /* a failure always says why */
		return;
	}
	struct nf_etl_event ev;
	volatile uint64_t h = 0;
	uint64_t n = 0;
	int rc;
	while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0) {
		n++;
		if (ev.payload_size && ev.payload)
			h += ev.payload[0] + ev.payload[ev.payload_size - 1];
		uint32_t pos = 0;
		struct nf_etl_ext_item it;
		while (nf_etl_ext_next(&ev, &pos, &it))
			h += it.size ? it.data[it.size - 1] : 0;
		char s[32];
		h += nf_etl_tracelogging_name(&ev, s, sizeof(s));
		h += nf_etl_tracelogging_provider(&ev, s, sizeof(s));
		if (ev.dxg)
			h += touch(ev.dxg);
	}
	/* Every record takes at least 8 bytes of the file. */
	if (n > size / 8 || (rc < 0 && !err.msg[0]))
		abort();
	const struct nf_etl_count *c;
	size_t nc = nf_etl_reader_counts(r, &c, NULL);
	uint64_t sum = 0;
	for (size_t i = 0; i < nc; i++)
		sum += c[i].events;
	if (sum != n || nf_etl_reader_events(r) != n)
		abort();
	(void)h; /* read back: the loads above are not optimised away */
	nf_etl_reader_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy, so that any over-read is caught. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	walk(copy, size, 0);
	walk(copy, size, NF_ETL_FILE_ORDER);
	if (size >= 4) {
		uint16_t id = (uint16_t)(copy[0] | copy[1] << 8);
		struct nf_etl_dxg_record rec;
		const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info(id % 600);
		if (nf_etl_dxg_decode((uint16_t)(id % 600), copy[2], copy + 4, (uint32_t)(size - 4), copy[3] & 1 ? 8 : 4,
				      &rec) == NF_ETL_DXG_OK) {
			if (!ei)
				abort();
			volatile uint64_t h = touch(&rec);
			(void)h;
		}
	}
	free(copy);
	return 0;
}
