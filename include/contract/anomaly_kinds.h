/*
 * Private utility tier (core/, not installed): the names of the finding and
 * anomaly kinds, from their single source schemas/anomalies.def. Every module
 * that prints a finding or writes or reads an anomalies row takes the name
 * from here (the parser's nf_finding_kind_name, the timeline builder, the
 * kernel and ETW ingests, the viewer), so one kind has one name.
 *
 * Findings are indexed by enum nf_finding_kind (parser.h), which follows the
 * order of the NF_FINDING lines; parser/logreplay.c checks that at compile
 * time.
 */
#ifndef NF_CORE_ANOMALY_KINDS_H
#define NF_CORE_ANOMALY_KINDS_H

#include <stdbool.h>
#include <stddef.h>

/* Anomalies kinds that are not log replay findings. */
enum nf_anomaly_kind {
#define NF_FINDING(id, name, illegal, row, doc)
#define NF_ANOMALY(id, name, doc) NF_ANOMALY_##id,
#include "../schemas/anomalies.def"
#undef NF_FINDING
#undef NF_ANOMALY
	NF_ANOMALY_COUNT
};

/* Positions of the findings in the table (= enum nf_finding_kind). */
enum nf_finding_pos {
#define NF_FINDING(id, name, illegal, row, doc) NF_FINDING_POS_##id,
#define NF_ANOMALY(id, name, doc)
#include "../schemas/anomalies.def"
#undef NF_FINDING
#undef NF_ANOMALY
	NF_FINDING_POS_COUNT
};

struct nf_finding_kind_info {
	const char *name;
	bool illegal;   /* no valid session has one */
	bool row;       /* the timeline builder writes an anomalies row for it */
};

/* The finding at position k (enum nf_finding_kind), or NULL past the table. */
static inline const struct nf_finding_kind_info *nf_finding_kind_info(unsigned k)
{
	static const struct nf_finding_kind_info info[NF_FINDING_POS_COUNT] = {
#define NF_FINDING(id, name, illegal, row, doc) [NF_FINDING_POS_##id] = { name, illegal, row },
#define NF_ANOMALY(id, name, doc)
#include "../schemas/anomalies.def"
#undef NF_FINDING
#undef NF_ANOMALY
	};

	return k < NF_FINDING_POS_COUNT ? &info[k] : NULL;
}

/* The anomalies kind of a finding the builder writes a row for, else NULL. */
static inline const char *nf_finding_anomaly_name(unsigned k)
{
	const struct nf_finding_kind_info *i = nf_finding_kind_info(k);

	return i && i->row ? i->name : NULL;
}

/* The name of an anomalies kind that is not a finding. */
static inline const char *nf_anomaly_name(enum nf_anomaly_kind k)
{
	static const char *const names[NF_ANOMALY_COUNT] = {
#define NF_FINDING(id, name, illegal, row, doc)
#define NF_ANOMALY(id, name, doc) [NF_ANOMALY_##id] = name,
#include "../schemas/anomalies.def"
#undef NF_FINDING
#undef NF_ANOMALY
	};

	return (unsigned)k < NF_ANOMALY_COUNT ? names[k] : "unknown";
}

#endif
