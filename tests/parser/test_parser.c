/* The parser test program: log replay and babeltrace2 reader tests. */
#include "nf_test.h"
#include "test_parser.h"

int main(void)
{
	Suite *s = suite_create("parser");

	add_logreplay_tests(s);
	add_reader_tests(s);
	return nf_test_main(s);
}
