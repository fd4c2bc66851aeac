/*
 * A small Windows ETW capture for the HTML report's tests, written with the
 * ETL test writer (tests/etl/etl_writer.h): two contexts on GPU nodes 0 and
 * 1 of one adapter, a signal and the wait it releases, three DMA packets
 * (two on node 0, one on node 1) and two VSyncs. Times at 100 ns per tick
 * from the header's 1000: see html_etl.c for each event's time.
 */
#ifndef NF_TESTS_HTML_ETL_H
#define NF_TESTS_HTML_ETL_H

/* Writes the capture to path: 0, or -1 when it cannot be written. */
int html_etl_write(const char *path);

#endif
