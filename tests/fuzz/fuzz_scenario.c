/*
 * Fuzz target for the scenario parser (capture/scenario.c): the input is a
 * scenario text, passed with its exact length and no terminating NUL (so a
 * read past the end is caught). It is parsed only, never run: a valid
 * scenario may legitimately ask for hours of simulation. A parse either
 * succeeds or fails with NF_EFORMAT and a non-empty "name:line:column:" message.
 */
#include "scenario.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_scenario *sc = NULL;
	struct nf_error err;
	char *text = malloc(size ? size : 1);
	int rc;

	if (!text)
		return 0;
	if (size)
		memcpy(text, data, size);
	nf_error_clear(&err);
	rc = nf_scenario_parse("fuzz.nfs", text, size, &sc, &err);
	if (rc == 0) {
		struct nf_runtime_config cfg;

		if (!sc)
			abort();
		nf_runtime_config_init(&cfg);
		nf_scenario_apply_settings(sc, &cfg);
	} else {
		if (sc || (rc != NF_EFORMAT && rc != NF_ENOMEM) || err.code != rc ||
		    strncmp(err.msg, "fuzz.nfs:", 9) != 0)
			abort();
	}
	nf_scenario_destroy(sc);
	free(text);
	return 0;
}
