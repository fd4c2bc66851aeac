/*
 * A program linking libnfence whose queue names are hostile to every output
 * of `nftrace diff` (terminal escapes, a newline, quotes and commas for CSV, a
 * spreadsheet formula, a UTF-8 C1 control, a byte that is not UTF-8, a
 * backslash), for `nftrace record -- nf_diff_hostile [slow]` in test_diff.
 * Each named queue waits on a fence that the producer queue signals after
 * some work; with "slow" that work is 30% longer, so every named queue's
 * waits change and its name lands in the gate's detail and the aligned list.
 * Exit status: 0, or 1 with the library's error on stderr.
 */
#include <stdio.h>
#include <string.h>

#include "nftrace/nfence.h"

static const char *const names[] = {
	"esc\x1b[31mred\x1b[0m",
	"nl\nline2,comma\"quote",
	"=HYPERLINK(\"http://x\")",
	"c1\xc2\x9b" "31m",
	"bad\xff utf8 \\ back",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

int main(int argc, char **argv)
{
	struct nf_runtime_config cfg;
	struct nf_adapter_desc desc;
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 1 };
	struct nf_error err;
	nf_runtime *rt = NULL;
	nf_handle prod, q[N_NAMES], f;
	uint32_t adapter;
	uint64_t work = argc > 1 && !strcmp(argv[1], "slow") ? 39000 : 30000;
	int rc;

	memset(&err, 0, sizeof(err));
	nf_runtime_config_init(&cfg);
	nf_adapter_desc_init(&desc);
	desc.name = "GPU";
	desc.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
	rc = nf_runtime_create_from_env(&cfg, &rt, &err);
	if (!rc)
		rc = nf_adapter_create(rt, &desc, &adapter, &err);
	if (!rc)
		rc = nf_hwqueue_create(rt, adapter, 0, 0, "producer", &prod, &err);
	for (uint32_t i = 0; !rc && i < N_NAMES; i++)
		rc = nf_hwqueue_create(rt, adapter, i + 1, 0, names[i], &q[i], &err);
	if (!rc)
		rc = nf_fence_create(rt, adapter, &fd, &f, &err);
	for (uint64_t v = 1; !rc && v <= 60; v++) {
		for (size_t i = 0; !rc && i < N_NAMES; i++)
			rc = nf_queue_wait(rt, q[i], f, v, &err);
		if (!rc)
			rc = nf_queue_work(rt, prod, work + (v % 4) * 1000, &err);
		if (!rc)
			rc = nf_queue_signal(rt, prod, f, v, &err);
		if (!rc)
			rc = nf_runtime_advance(rt, 200000, &err);
	}
	if (!rc)
		rc = nf_runtime_finish(rt, &err);
	nf_runtime_destroy(rt);
	if (rc) {
		fprintf(stderr, "nf_diff_hostile: %s\n", err.msg);
		return 1;
	}
	return 0;
}
