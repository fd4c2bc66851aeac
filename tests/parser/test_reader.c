/* placeholder */
#include "nf_test.h"
#include "test_parser.h"
void add_reader_tests(Suite *s) { (void)s; }
