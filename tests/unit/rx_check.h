/*
 * rx_check.h — the common end of a unit-test executable (Check framework).
 *
 * Every tests/unit/<component>/test_*.c builds its Suite and ends with
 *     int main(void) { return rx_check_run(my_suite()); }
 * Included as "../rx_check.h" (the test targets add no include directory of their own).
 */
#ifndef RX_CHECK_H
#define RX_CHECK_H

#include <check.h>
#include <stdlib.h>

/* Runs every test of s (CK_NORMAL output; forking as CK_FORK says) and frees the
 * runner, which takes ownership of s. Returns EXIT_SUCCESS when every test passed,
 * else EXIT_FAILURE, for `return rx_check_run(s);` from main. */
static inline int rx_check_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
