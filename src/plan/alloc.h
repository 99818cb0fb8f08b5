/* alloc.h: who holds which GPUs: for every job, the node of each of its replicas, in placement
 * order (the order matters to the job: it is the ring its replicas form). */
#ifndef CASTOR_PLAN_ALLOC_H
#define CASTOR_PLAN_ALLOC_H

/*
 * An allocation of njobs jobs on nnodes nodes with at most width replicas per job (the cluster's
 * GPU count). Row j lists count[j] node ids; the same node appears in one contiguous run. Owned by
 * whoever created it with alloc_new; alloc_free releases it.
 */
struct alloc {
    int njobs;
    int nnodes;
    int width;
    int *count; /* njobs values */
    int *node;  /* njobs x width node ids; only the first count[j] of row j are meaningful */
};

/* A new, empty allocation (every job holds nothing). ERR_INVAL for bad sizes, ERR_NOMEM. */
int alloc_new(int njobs, int nnodes, int width, struct alloc **out);

void alloc_free(struct alloc *a);

/* Copy src into dst (same sizes, asserted). */
void alloc_copy(struct alloc *dst, const struct alloc *src);

/* Job j holds nothing. */
void alloc_clear_job(struct alloc *a, int j);

/* Append n replicas of job j on node; ERR_RANGE if the row is full or node is out of range,
 * ERR_INVAL if node holds replicas of j earlier in the row but not at its end (runs stay whole). */
int alloc_add(struct alloc *a, int j, int node, int n);

/* Replicas of job j on node. */
int alloc_on_node(const struct alloc *a, int j, int node);

/* Distinct nodes job j uses. */
int alloc_nodes_used(const struct alloc *a, int j);

/* 1 if job j's row (the node list, order included) is the same in a and b. */
int alloc_job_equal(const struct alloc *a, int ja, const struct alloc *b, int jb);

/*
 * Job j's placement: GPUs per node in the order of its row, written to place (at most nnodes
 * values); returns the number of nodes.
 */
int alloc_placement(const struct alloc *a, int j, int *place);

/* GPUs held on each node by all jobs, written to used (nnodes values). */
void alloc_node_usage(const struct alloc *a, int *used);

#endif
