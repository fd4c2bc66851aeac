/* Tests for core/: the error context and the event schema table. */
#include "nf_test.h"

#include "contract/errors.h"
#include "nftrace/events.h"

START_TEST(error_first_wins)
{
	struct nf_error err;

	nf_error_clear(&err);
	ck_assert_int_eq(nf_error_set(&err, NF_EINVAL, "bad %s", "thing"), NF_EINVAL);
	nf_error_set(&err, NF_EIO, "second");
	ck_assert_int_eq(err.code, NF_EINVAL);
	ck_assert_str_eq(err.msg, "bad thing");
	nf_error_prefix(&err, "file.txt:%d", 3);
	ck_assert_str_eq(err.msg, "file.txt:3: bad thing");
}
END_TEST

START_TEST(error_one_line)
{
	struct nf_error err;

	nf_error_clear(&err);
	nf_error_set(&err, NF_EFORMAT, "a\nb\r");
	ck_assert_str_eq(err.msg, "a b ");
	ck_assert_int_eq(nf_error_set(NULL, NF_EIO, "x"), NF_EIO);
	ck_assert_str_eq(nf_strerror(NF_ENOENT), "not found");
}
END_TEST

START_TEST(schema_table)
{
	const struct nf_event_desc *d = nf_event_desc(NF_EV_FENCE_WAIT_QUEUED);

	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "FENCE_WAIT_QUEUED");
	ck_assert_str_eq(d->fields[NFF_FENCE_WAIT_QUEUED_value].name, "value");
	ck_assert_int_eq(d->fields[NFF_FENCE_WAIT_QUEUED_value].type, NF_FT_U64);
	ck_assert_int_eq(nf_event_id_by_name("NativeFenceLogRead"), NF_EV_LOG_READ);
	ck_assert_int_eq(nf_event_id_by_name("nope"), -1);
	ck_assert_ptr_null(nf_event_desc(NF_EV_COUNT));
	ck_assert_uint_eq(nf_event_desc(NF_EV_CALIBRATE_GPU_CLOCK)->dxgkrnl_id, 262);
	/* Every sequence field is preceded by its length field. */
	for (uint32_t i = 0; i < NF_EV_COUNT; i++) {
		const struct nf_event_desc *e = nf_event_desc(i);

		ck_assert_uint_le(e->n_fields, NF_EVENT_MAX_FIELDS);
		for (uint32_t f = 0; f < e->n_fields; f++)
			if (e->fields[f].type == NF_FT_U32SEQ || e->fields[f].type == NF_FT_ENTRIES) {
				ck_assert_uint_gt(f, 0);
				ck_assert_int_eq(e->fields[f - 1].type, NF_FT_U32);
			}
	}
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, error_first_wins);
	tcase_add_test(tc, error_one_line);
	tcase_add_test(tc, schema_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(core_suite());
}
