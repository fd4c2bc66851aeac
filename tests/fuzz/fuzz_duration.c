/*
 * Fuzz target for nf_parse_duration (viewer/duration.c), which reads the
 * --from/--to times users type for `nftrace report`. The input becomes a
 * NUL-terminated string (cut at its first NUL). A parse either gives a value
 * in [0, 2^63) or NF_EINVAL with a message; the value is checked against an
 * independent reading of the same text where one is easy to make.
 */
#include "contract/render.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct nf_error err;
	int64_t ns = -1;
	int rc;

	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	nf_error_clear(&err);
	rc = nf_parse_duration(text, &ns, &err);
	if (rc == 0) {
		if (ns < 0)
			abort();
		/* Plain digits with "ns" or no unit: the value is the number itself. */
		size_t n = strspn(text, "0123456789");
		if (n > 0 && n < 19 && (text[n] == '\0' || strcmp(text + n, "ns") == 0)) {
			int64_t v = 0;

			for (size_t i = 0; i < n; i++)
				v = v * 10 + (text[i] - '0');
			if (v != ns)
				abort();
		}
	} else if (rc != NF_EINVAL || err.code != rc || err.msg[0] == '\0') {
		abort();
	}
	free(text);
	return 0;
}
