/* alloc_rows.h: test helpers shared by the policy tests: write and check one job's row of an
 * allocation (node per replica, in placement order). Included by tests only. */
#ifndef CASTOR_TESTS_POLICIES_ALLOC_ROWS_H
#define CASTOR_TESTS_POLICIES_ALLOC_ROWS_H

#include "plan/alloc.h"

/* Give job j of a the replicas on nodes[0..n-1], in that order. */
static inline void set_row(struct alloc *a, int j, const int *nodes, int n)
{
    alloc_clear_job(a, j);
    for (int i = 0; i < n; i++)
        assert_int_equal(alloc_add(a, j, nodes[i], 1), 0);
}

/* Job j of a holds exactly the replicas on nodes[0..n-1], in that order. */
static inline void assert_row(const struct alloc *a, int j, const int *nodes, int n)
{
    assert_int_equal(a->count[j], n);
    for (int i = 0; i < n; i++)
        assert_int_equal(a->node[j * a->width + i], nodes[i]);
}

#endif
