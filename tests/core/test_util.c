/* Tests for core's private utility tier: the 64-bit mixer and the
 * open-addressing map of util_hash.h, the capped array growth of capbuf.h. */
#include "nf_test.h"

#include "contract/anomaly_kinds.h"
#include "contract/capbuf.h"
#include "contract/text.h"
#include "contract/util_hash.h"

START_TEST(mix64_known_values)
{
	/* MurmurHash3's fmix64: 0 stays 0; these reference values pin the
	 * constants (a typo in one would change them). */
	ck_assert_uint_eq(nf_mix64(0), 0);
	ck_assert_uint_eq(nf_mix64(1), 0xb456bcfc34c2cb2cULL);
	ck_assert_uint_eq(nf_mix64(0xffffffffffffffffULL), 0x64b5720b4b825f21ULL);
	ck_assert_uint_ne(nf_mix64(2), nf_mix64(1));
}
END_TEST

START_TEST(u64map_put_find_overwrite)
{
	struct nf_u64map m = { 0 };

	ck_assert_ptr_null(nf_u64map_find(&m, 0));
	ck_assert_int_eq(nf_u64map_put(&m, 0, 10), 0);
	ck_assert_int_eq(nf_u64map_put(&m, UINT64_MAX, 20), 0);
	ck_assert_int_eq(nf_u64map_put(&m, 7, 30), 0);
	ck_assert_uint_eq(*nf_u64map_find(&m, 0), 10);
	ck_assert_uint_eq(*nf_u64map_find(&m, UINT64_MAX), 20);
	ck_assert_int_eq(nf_u64map_put(&m, 7, 31), 0);
	ck_assert_uint_eq(*nf_u64map_find(&m, 7), 31);
	ck_assert_uint_eq(m.n, 3);
	ck_assert_ptr_null(nf_u64map_find(&m, 8));
	nf_u64map_free(&m);
	ck_assert_ptr_null(nf_u64map_find(&m, 7));
}
END_TEST

START_TEST(u64map_grows_and_keeps_all)
{
	struct nf_u64map m = { 0 };
	const uint64_t n = 100000;

	for (uint64_t k = 0; k < n; k++)
		ck_assert_int_eq(nf_u64map_put(&m, k * 0x10000, k + 1), 0);
	ck_assert_uint_eq(m.n, n);
	ck_assert(m.cap >= n * 4 / 3);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t *v = nf_u64map_find(&m, k * 0x10000);

		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(*v, k + 1);
	}
	nf_u64map_free(&m);
}
END_TEST

START_TEST(u64map_delete_keeps_chains)
{
	struct nf_u64map m = { 0 };

	/* Many keys in a small table: long probe runs; delete every third and
	 * every other key must still be found. */
	for (uint64_t k = 0; k < 40; k++)
		ck_assert_int_eq(nf_u64map_put(&m, k, k * 2), 0);
	for (uint64_t k = 0; k < 40; k += 3)
		nf_u64map_del(&m, k);
	nf_u64map_del(&m, 1000); /* absent: nothing happens */
	for (uint64_t k = 0; k < 40; k++) {
		uint64_t *v = nf_u64map_find(&m, k);

		if (k % 3 == 0) {
			ck_assert_ptr_null(v);
		} else {
			ck_assert_ptr_nonnull(v);
			ck_assert_uint_eq(*v, k * 2);
		}
	}
	ck_assert_uint_eq(m.n, 40 - 14);
	nf_u64map_free(&m);
}
END_TEST

START_TEST(u64map_max_keys)
{
	struct nf_u64map m = { 0 };

	m.max_keys = 100;
	for (uint64_t k = 0; k < 100; k++)
		ck_assert_int_eq(nf_u64map_put(&m, k, k), 0);
	ck_assert_int_eq(nf_u64map_put(&m, 100, 1), NF_ENOMEM);
	ck_assert_int_eq(nf_u64map_put(&m, 5, 55), 0); /* an existing key still updates */
	ck_assert_uint_eq(*nf_u64map_find(&m, 5), 55);
	nf_u64map_del(&m, 0);
	ck_assert_int_eq(nf_u64map_put(&m, 100, 1), 0); /* room again */
	nf_u64map_free(&m);
	ck_assert_uint_eq(m.max_keys, 100); /* free keeps the bound */
}
END_TEST

START_TEST(array_reserve_doubles_and_caps)
{
	uint32_t *v = NULL;
	size_t cap = 0;

	ck_assert_int_eq(nf_array_reserve((void **)&v, &cap, 0, sizeof(*v), 8, 100), 0);
	ck_assert_uint_eq(cap, 0);
	ck_assert_int_eq(nf_array_reserve((void **)&v, &cap, 1, sizeof(*v), 8, 100), 0);
	ck_assert_uint_eq(cap, 8);
	ck_assert_int_eq(nf_array_reserve((void **)&v, &cap, 9, sizeof(*v), 8, 100), 0);
	ck_assert_uint_eq(cap, 16);
	v[15] = 7;
	ck_assert_int_eq(nf_array_reserve((void **)&v, &cap, 70, sizeof(*v), 8, 100), 0);
	ck_assert_uint_eq(cap, 100); /* 128 clamped to the bound */
	ck_assert_uint_eq(v[15], 7);
	v[99] = 1;
	/* Past the bound: refused, the array untouched. */
	uint32_t *before = v;
	ck_assert_int_eq(nf_array_reserve((void **)&v, &cap, 101, sizeof(*v), 8, 100), NF_ENOMEM);
	ck_assert_ptr_eq(v, before);
	ck_assert_uint_eq(cap, 100);
	free(v);
}
END_TEST

START_TEST(array_reserve_overflow)
{
	unsigned char *p = NULL;
	size_t cap = 0;

	/* elem * count would overflow size_t: NF_ENOMEM, not a short block. */
	ck_assert_int_eq(nf_array_reserve((void **)&p, &cap, SIZE_MAX / 8 + 2, 16, 64, 0), NF_ENOMEM);
	ck_assert_ptr_null(p);
	ck_assert_uint_eq(cap, 0);
	/* Unbounded byte buffer. */
	ck_assert_int_eq(nf_array_reserve((void **)&p, &cap, 65537, 1, 65536, 0), 0);
	ck_assert_uint_eq(cap, 131072);
	free(p);
}
END_TEST

START_TEST(anomaly_kind_names)
{
	/* One name per kind, all distinct; 'lost' everywhere for lost entries. */
	const char *seen[NF_FINDING_POS_COUNT + NF_ANOMALY_COUNT];
	size_t n = 0;

	ck_assert_str_eq(nf_finding_kind_info(NF_FINDING_POS_LOST)->name, "lost");
	ck_assert_str_eq(nf_finding_anomaly_name(NF_FINDING_POS_LOST), "lost");
	ck_assert_ptr_null(nf_finding_anomaly_name(NF_FINDING_POS_NEW_EPOCH)); /* no row */
	ck_assert(!nf_finding_kind_info(NF_FINDING_POS_ZERO_TS)->illegal);
	ck_assert(nf_finding_kind_info(NF_FINDING_POS_BACKWARDS_TS)->illegal);
	ck_assert_ptr_null(nf_finding_kind_info(NF_FINDING_POS_COUNT));
	ck_assert_str_eq(nf_anomaly_name(NF_ANOMALY_OS_OVERRUN_FLAG), "os_overrun_flag");
	ck_assert_str_eq(nf_anomaly_name(NF_ANOMALY_COUNT), "unknown");
	for (unsigned k = 0; k < NF_FINDING_POS_COUNT; k++)
		seen[n++] = nf_finding_kind_info(k)->name;
	for (unsigned k = 0; k < NF_ANOMALY_COUNT; k++)
		seen[n++] = nf_anomaly_name((enum nf_anomaly_kind)k);
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(seen[i]);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(seen[i], seen[j]);
	}
}
END_TEST

START_TEST(text_copy_clean)
{
	char buf[8];

	nf_text_copy_clean(buf, sizeof(buf), "a\x1b[2Jb");
	ck_assert_str_eq(buf, "a?[2Jb");
	nf_text_copy_clean(buf, sizeof(buf), "x\xc2\x9by"); /* U+009B CSI: one '?' */
	ck_assert_str_eq(buf, "x?y");
	nf_text_copy_clean(buf, sizeof(buf), "0123456789");
	ck_assert_str_eq(buf, "0123456"); /* cut to the buffer, terminated */
	nf_text_copy_clean(buf, sizeof(buf), NULL);
	ck_assert_str_eq(buf, "");
	nf_text_copy_clean(buf, 0, "abc"); /* nothing written */
}
END_TEST

static Suite *util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("util");

	tcase_add_test(tc, mix64_known_values);
	tcase_add_test(tc, u64map_put_find_overwrite);
	tcase_add_test(tc, u64map_grows_and_keeps_all);
	tcase_add_test(tc, u64map_delete_keeps_chains);
	tcase_add_test(tc, u64map_max_keys);
	tcase_add_test(tc, array_reserve_doubles_and_caps);
	tcase_add_test(tc, array_reserve_overflow);
	tcase_add_test(tc, anomaly_kind_names);
	tcase_add_test(tc, text_copy_clean);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(util_suite());
}
