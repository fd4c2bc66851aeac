/*
 * A small Windows ETW capture for the CLI's reliability tests, written with
 * the ETL test writer (tests/etl/etl_writer.h): one adapter, a process
 * (1234) with a device, and per node a context of that process with a
 * signal, the wait on the next node's context it releases and a DMA packet.
 * test_hostile names the nodes and the process by the hostile-string set;
 * test_reliability3 adds a record stamped near 2^63.
 */
#ifndef NF_TESTS_ETL_FIXTURE_H
#define NF_TESTS_ETL_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct etl_fixture {
	const char *const *node_names; /* UTF-8 (written as ETW's UTF-16); n_nodes of them */
	size_t n_nodes;
	bool lone_surrogates;          /* one more node named by lone UTF-16 surrogates */
	const char *image;             /* process 1234's image name (bytes); NULL: "app.exe" */
	int64_t last_ticks;            /* > 0: a VSync stamped at these QPC ticks (100 ns each) */
	int64_t early_ticks;           /* < 0: an unwait of the first wait, stamped at these ticks,
					* before the wait it ends (an orphan the wait picks up) */
};

/* Writes the capture to path: 0, or -1 when it cannot be made. */
int etl_fixture_write(const char *path, const struct etl_fixture *f);

#endif
