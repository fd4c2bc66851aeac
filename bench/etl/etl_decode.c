/*
 * nfb_etl_decode FILE: the decode benchmark's driver — reads every record of
 * an ETL file with etl/ in time order, decoding every DxgKrnl record, and
 * prints "events N dxgkrnl D decoded K mismatches M". Nothing else: the
 * reader alone, for events per second next to `cat` of the same file.
 */
#include <inttypes.h>
#include <stdio.h>

#include "contract/etl.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: nfb_etl_decode FILE.etl\n");
		return 2;
	}
	struct nf_error err = {0};
	struct nf_etl_reader *r;
	if (nf_etl_reader_open(argv[1], NF_ETL_DECODE_DXGKRNL, &r, &err) < 0) {
		fprintf(stderr, "nfb_etl_decode: %s\n", err.msg);
		return 1;
	}
	struct nf_etl_event ev;
	uint64_t dxg = 0, decoded = 0, mism = 0;
	int rc;
	while ((rc = nf_etl_reader_next(r, &ev, &err)) > 0) {
		if (ev.dxg_verdict < 0)
			continue;
		dxg++;
		decoded += ev.dxg_verdict == NF_ETL_DXG_OK;
		mism += ev.dxg_verdict == NF_ETL_DXG_SIZE_MISMATCH;
	}
	if (rc < 0) {
		fprintf(stderr, "nfb_etl_decode: %s\n", err.msg);
		nf_etl_reader_destroy(r);
		return 1;
	}
	printf("events %" PRIu64 " dxgkrnl %" PRIu64 " decoded %" PRIu64 " mismatches %" PRIu64 "\n",
	       nf_etl_reader_events(r), dxg, decoded, mism);
	nf_etl_reader_destroy(r);
	return 0;
}
