/* The parts of the parser test program (one check suite, a file per area). */
#ifndef NF_TEST_PARSER_H
#define NF_TEST_PARSER_H

#include <check.h>
#include <inttypes.h>
#include <stdbool.h>

void add_logreplay_tests(Suite *s);
void add_reader_tests(Suite *s);

#endif
