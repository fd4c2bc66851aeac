/*
 * nf-make-tracedat FORMATS_DIR EVENTS_FILE OUT.dat: writes a trace-cmd file
 * from an event list (see tracedat_writer.h); how samples/kernel/dma-fence.dat
 * is made from samples/kernel/dma-fence.events.
 */
#include "tracedat_writer.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char why[512];
	char *text;

	if (argc != 4) {
		fprintf(stderr, "usage: nf-make-tracedat FORMATS_DIR EVENTS_FILE OUT.dat\n");
		return 2;
	}
	if (!(text = nf_tdw_slurp(argv[2], NULL))) {
		fprintf(stderr, "nf-make-tracedat: %s: cannot read\n", argv[2]);
		return 1;
	}
	if (nf_tdw_write(argv[1], text, argv[3], NULL, why, sizeof(why))) {
		fprintf(stderr, "nf-make-tracedat: %s\n", why);
		free(text);
		return 1;
	}
	free(text);
	return 0;
}
