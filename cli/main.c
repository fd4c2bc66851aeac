/* nftrace's main: finds the command's row in the table and dispatches it (cli.h). */
#include "cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

int main(int argc, char **argv)
{
	const struct nf_command *c;
	int rc;

	if (argc < 2) {
		nf_cli_print_main_usage(stderr);
		return NF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("nftrace %s\n", NF_VERSION);
		return NF_EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		nf_cli_print_main_usage(stdout);
		return NF_EXIT_OK;
	}
	if (!(c = nf_cli_find(argv[1]))) {
		fprintf(stderr, "nftrace: '%s' is not a command (see 'nftrace --help')\n", argv[1]);
		return NF_EXIT_USAGE;
	}
	/* A file size limit (ulimit -f) is a write error with a message, not a
	 * silent SIGXFSZ death that leaves a partial output. Not for a command
	 * that runs a program: the program would inherit the ignored signal
	 * (the CTF writer's committer ignores it on its own). */
	if (!(c->flags & NF_CMD_PROGRAM))
		signal(SIGXFSZ, SIG_IGN);
	rc = nf_cli_dispatch(c, argc - 1, argv + 1);
	/* Output that could not be written is a failure (git.c does the same). */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (rc == NF_EXIT_OK) /* else nf_cli_fail said it already: one line */
			fprintf(stderr, "nftrace %s: cannot write to standard output\n", c->name);
		return NF_EXIT_FAIL;
	}
	return rc;
}
