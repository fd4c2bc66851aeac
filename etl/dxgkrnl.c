/*
 * Microsoft-Windows-DxgKrnl payload decoding, from the table in
 * schemas/dxgkrnl.def: the field lists, the id -> event map, and the decoder
 * that reads a payload field by field within its size.
 */
#include "contract/etl.h"

#include <string.h>

#include "etl_int.h"

/* The field lists, one array per event. */
#define NF_DXG_EVENT(NAME, id, min_version, max_version, name, flags, doc) \
	static const struct nf_etl_dxg_field_info fields_##NAME[] = {
#define NF_DXG_FIELD(NAME, TYPE, field, count, since, doc) \
	{#field, NF_DXG_##TYPE, NF_DXGF_##NAME##_##count, since, doc},
#define NF_DXG_EVENT_END(NAME) };
#include "../schemas/dxgkrnl.def"
#undef NF_DXG_EVENT
#undef NF_DXG_FIELD
#undef NF_DXG_EVENT_END

/* The events, indexed by enum nf_etl_dxg_event. */
static const struct nf_etl_dxg_event_info events[NF_DXG_EV_COUNT] = {
#define NF_DXG_EVENT(NAME, id, min_version, max_version, name, flags, doc) \
	[NF_DXG_EV_##NAME] = {NF_DXG_EV_##NAME, id, min_version, max_version, name, flags, doc, \
			      NF_DXGF_##NAME##__COUNT, fields_##NAME},
#define NF_DXG_FIELD(NAME, TYPE, field, count, since, doc)
#define NF_DXG_EVENT_END(NAME)
#include "../schemas/dxgkrnl.def"
#undef NF_DXG_EVENT
#undef NF_DXG_FIELD
#undef NF_DXG_EVENT_END
};

/* id -> event; a duplicate id in the table is a compile error (-Woverride-init). */
#define MAX_ID 1023
static const uint8_t by_id[MAX_ID + 1] = {
#define NF_DXG_EVENT(NAME, id, min_version, max_version, name, flags, doc) [id] = NF_DXG_EV_##NAME,
#define NF_DXG_FIELD(NAME, TYPE, field, count, since, doc)
#define NF_DXG_EVENT_END(NAME)
#include "../schemas/dxgkrnl.def"
#undef NF_DXG_EVENT
#undef NF_DXG_FIELD
#undef NF_DXG_EVENT_END
};

_Static_assert(NF_DXG_EV_COUNT <= 256, "by_id holds uint8_t");

/* Every event fits nf_etl_dxg_record.f. */
#define NF_DXG_EVENT(NAME, id, min_version, max_version, name, flags, doc)
#define NF_DXG_FIELD(NAME, TYPE, field, count, since, doc)
#define NF_DXG_EVENT_END(NAME) \
	_Static_assert(NF_DXGF_##NAME##__COUNT <= NF_ETL_DXG_MAX_FIELDS, #NAME " has too many fields");
#include "../schemas/dxgkrnl.def"
#undef NF_DXG_EVENT
#undef NF_DXG_FIELD
#undef NF_DXG_EVENT_END

const struct nf_etl_dxg_event_info *nf_etl_dxg_event_info(uint16_t id)
{
	if (id > MAX_ID || by_id[id] == 0)
		return NULL;
	return &events[by_id[id]];
}

const struct nf_etl_dxg_event_info *nf_etl_dxg_event_info_by_event(int event)
{
	if (event <= NF_DXG_EV_NONE || event >= NF_DXG_EV_COUNT)
		return NULL;
	return &events[event];
}

const char *nf_etl_dxg_type_name(int type)
{
	switch (type) {
	case NF_DXG_U8: return "u8";
	case NF_DXG_U16: return "u16";
	case NF_DXG_U32: return "u32";
	case NF_DXG_U64: return "u64";
	case NF_DXG_I32: return "i32";
	case NF_DXG_I64: return "i64";
	case NF_DXG_PTR: return "ptr";
	case NF_DXG_BOOL: return "bool";
	case NF_DXG_GUID: return "guid";
	case NF_DXG_WSTR: return "wstr";
	case NF_DXG_BIN: return "bytes";
	case NF_DXG_PTR_ARRAY: return "ptr[]";
	case NF_DXG_U64_ARRAY: return "u64[]";
	default: return "?";
	}
}

static uint32_t fixed_size(int type, unsigned ps)
{
	switch (type) {
	case NF_DXG_U8: return 1;
	case NF_DXG_U16: return 2;
	case NF_DXG_U32: case NF_DXG_I32: case NF_DXG_BOOL: return 4;
	case NF_DXG_U64: case NF_DXG_I64: return 8;
	case NF_DXG_PTR: return ps;
	case NF_DXG_GUID: return 16;
	default: return 0;
	}
}

int nf_etl_dxg_decode(uint16_t id, uint8_t version, const void *payload, uint32_t size,
		      unsigned pointer_size, struct nf_etl_dxg_record *out)
{
	const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info(id);
	if (!ei)
		return NF_ETL_DXG_NOT_IN_TABLE;
	if (version < ei->min_version)
		return NF_ETL_DXG_UNKNOWN_VERSION;
	if (pointer_size != 4 && pointer_size != 8)
		return NF_ETL_DXG_SIZE_MISMATCH;
	const uint8_t *p = payload;
	uint8_t v = version > ei->max_version ? ei->max_version : version;
	uint32_t pos = 0;

	for (uint32_t i = 0; i < ei->nfields; i++) {
		const struct nf_etl_dxg_field_info *fi = &ei->fields[i];
		struct nf_etl_dxg_value *val = &out->f[i];
		val->present = false;
		val->u = 0;
		val->p = NULL;
		if (fi->since > v)
			continue;
		uint32_t left = size - pos;
		uint32_t k = fixed_size(fi->type, pointer_size);
		if (k) {
			if (left < k)
				return NF_ETL_DXG_SIZE_MISMATCH;
			const uint8_t *q = p + pos;
			switch (k) {
			case 1: val->u = q[0]; break;
			case 2: val->u = etl_u16(q); break;
			case 4: val->u = etl_u32(q); break;
			case 8: val->u = etl_u64(q); break;
			default: val->u = 16; break; /* GUID: its byte count */
			}
			if (fi->type == NF_DXG_GUID)
				val->p = q;
			pos += k;
		} else if (fi->type == NF_DXG_WSTR) {
			uint32_t e = pos;
			while (e + 2 <= size && etl_u16(p + e) != 0)
				e += 2;
			if (e + 2 > size) /* no terminating NUL inside the payload */
				return NF_ETL_DXG_SIZE_MISMATCH;
			val->p = p + pos;
			val->u = e - pos;
			pos = e + 2;
		} else {
			/* BIN and arrays: the count is an earlier field. */
			if (fi->count_field < 0 || (uint32_t)fi->count_field >= i ||
			    !out->f[fi->count_field].present)
				return NF_ETL_DXG_SIZE_MISMATCH;
			uint64_t n = out->f[fi->count_field].u;
			uint32_t es = fi->type == NF_DXG_BIN ? 1 : fi->type == NF_DXG_PTR_ARRAY ? pointer_size : 8;
			if (n > left / es)
				return NF_ETL_DXG_SIZE_MISMATCH;
			val->p = p + pos;
			val->u = n;
			pos += (uint32_t)n * es;
		}
		val->present = true;
	}
	uint32_t trailing = 0;
	if (pos != size) {
		if (version <= ei->max_version)
			return NF_ETL_DXG_SIZE_MISMATCH;
		trailing = size - pos; /* a newer version: fields appended */
	}
	out->event = ei->event;
	out->id = id;
	out->version = version;
	out->pointer_size = (uint8_t)pointer_size;
	out->name = ei->name;
	out->flags = ei->flags;
	out->nfields = ei->nfields;
	out->trailing = trailing;
	return NF_ETL_DXG_OK;
}

uint64_t nf_etl_dxg_elem(const struct nf_etl_dxg_record *rec, unsigned field, uint32_t i)
{
	const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(rec->event);
	if (!ei || field >= rec->nfields || !rec->f[field].present || i >= rec->f[field].u)
		return 0;
	int type = ei->fields[field].type;
	const uint8_t *q = rec->f[field].p;
	if (type == NF_DXG_PTR_ARRAY)
		return rec->pointer_size == 4 ? etl_u32(q + (size_t)i * 4) : etl_u64(q + (size_t)i * 8);
	if (type == NF_DXG_U64_ARRAY)
		return etl_u64(q + (size_t)i * 8);
	return 0;
}

size_t nf_etl_dxg_wstr(const struct nf_etl_dxg_record *rec, unsigned field, char *out, size_t cap)
{
	const struct nf_etl_dxg_event_info *ei = nf_etl_dxg_event_info_by_event(rec->event);
	if (cap > 0)
		out[0] = '\0';
	if (!ei || field >= rec->nfields || !rec->f[field].present || ei->fields[field].type != NF_DXG_WSTR)
		return 0;
	return nf_etl_utf16_to_utf8(rec->f[field].p, rec->f[field].u, out, cap);
}
