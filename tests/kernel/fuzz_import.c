/*
 * Fuzz target: a trace-cmd file through `nftrace import` (the header checks,
 * libtracecmd, the decoder with its per-field bounds checks, the CTF writer).
 * Each input is written to a file and imported into a fresh directory, which
 * is removed afterwards; errors are fine, crashes and sanitizer reports are not.
 * Built a second time with FUZZ_TEXT as fuzz_text: ftrace text (kernel/text.c,
 * the records it makes for the same decoder).
 */
#include "contract/kernel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_dir[64];

static void fz_cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fz_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_import: could not remove %s\n", fz_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[128], session[128], cmd[160];
	struct nf_kernel_stats st;
	struct nf_error err;
	FILE *f;

	if (!fz_dir[0]) {
		snprintf(fz_dir, sizeof(fz_dir), "/tmp/nftrace-fuzz-import-XXXXXX");
		if (!mkdtemp(fz_dir))
			abort();
		atexit(fz_cleanup);
	}
	snprintf(path, sizeof(path), "%s/in.dat", fz_dir);
	snprintf(session, sizeof(session), "%s/s", fz_dir);
	if (!(f = fopen(path, "wb")))
		abort();
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	nf_error_clear(&err);
#ifdef FUZZ_TEXT
	if (nf_kernel_import_text(path, session, NULL, &st, &err) == 0 && st.records > (uint64_t)size)
		abort(); /* every record is a line of the file */
#else
	if (nf_kernel_import(path, session, NULL, &st, &err) == 0 && st.records > (uint64_t)size)
		abort(); /* every record takes at least 8 bytes of the file */
#endif
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", session);
	if (system(cmd) != 0)
		abort();
	return 0;
}
