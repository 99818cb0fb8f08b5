/* snapshot_file.h: decide-step snapshots of a fixed cluster written to a file and read back, one
 * JSON object per line, every number exact, so that a benchmark can judge a change of the search on
 * the same snapshots whatever the change decides (castor-bench-pollux-ga --record / --replay).
 * Offers, booting instances and the oracle are not kept: the policies compared never read them. */
#ifndef CASTOR_BENCH_SNAPSHOT_FILE_H
#define CASTOR_BENCH_SNAPSHOT_FILE_H

#include <stdio.h>

#include "plan/snapshot.h"
#include "util/error.h"

/* A snapshot read back: s points into the arrays below, all owned here (snapfile_free). */
struct snapfile_snap {
    struct snapshot s;
    struct snap_node *nodes;
    struct snap_job *jobs;
    char **names;      /* the jobs' names */
    struct alloc *cur; /* s.current */
    char *label;       /* what the writer tagged it with (a workload's name) */
    long tick;         /* the writer's tick number */
};

/*
 * Appends s to f as one line, tagged with label and tick (both given back by snapfile_read).
 * Non-finite numbers are written as the strings "nan", "inf" and "-inf". ERR_NOMEM, ERR_IO;
 * ERR_INVAL for a snapshot with offers, or a job whose model has no name.
 */
int snapfile_write(FILE *f, const struct snapshot *s, const char *label, long tick);

/*
 * Reads one line written by snapfile_write (len bytes, no newline needed). On success fills *out,
 * which the caller frees with snapfile_free; on error returns ERR_PARSE (ERR_NOMEM) with e naming
 * path, lineno and the field at fault, and leaves *out untouched.
 */
int snapfile_read(const char *text, size_t len, const char *path, int lineno,
                  struct snapfile_snap *out, struct error *e);

void snapfile_free(struct snapfile_snap *sn);

#endif
