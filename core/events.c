/* The event schema table, generated from schemas/events.def. */
#include "nftrace/events.h"

#include <string.h>

#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) static const struct nf_field_desc nf_fields_##ID[] = {
#define NF_FIELD(ID, TYPE, NAME, DOC) { #NAME, NF_FT_##TYPE, DOC },
#define NF_EVENT_END(ID) };
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END

static const struct nf_event_desc nf_events[NF_EV_COUNT] = {
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC) \
	[NF_EV_##ID] = { NAME, DXG, STREAM, DOC, nf_fields_##ID, \
			 (uint32_t)(sizeof(nf_fields_##ID) / sizeof(nf_fields_##ID[0])) },
#define NF_FIELD(ID, TYPE, NAME, DOC)
#define NF_EVENT_END(ID)
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END
};

/* Every event must fit nf_event.f[]. */
#define NF_EVENT(ID, NAME, DXG, STREAM, DOC)
#define NF_FIELD(ID, TYPE, NAME, DOC)
#define NF_EVENT_END(ID) _Static_assert(NFF_##ID##__COUNT <= NF_EVENT_MAX_FIELDS, #ID " has too many fields");
#include "../schemas/events.def"
#undef NF_EVENT
#undef NF_FIELD
#undef NF_EVENT_END

const struct nf_event_desc *nf_event_desc(uint32_t id)
{
	if (id >= NF_EV_COUNT)
		return NULL;
	return &nf_events[id];
}

int nf_event_id_by_name(const char *name)
{
	for (int i = 0; i < NF_EV_COUNT; i++)
		if (strcmp(nf_events[i].name, name) == 0)
			return i;
	return -1;
}
