/* report.h: a self-contained HTML report of one or more simulations (no network needed): GPUs per
 * job over time, cluster utilisation, the distribution of completion times, a summary table, and
 * for rented fleets the nodes by market and the dollars billed over time. */
#ifndef CASTOR_SIM_REPORT_H
#define CASTOR_SIM_REPORT_H

#include "sim/record.h"

/* Write the report of n runs (records borrowed) to path. Errors: ERR_IO, ERR_NOMEM, ERR_INVAL
 * (n < 1, or a fleet record with samples but without its node counts or dollars). */
int sim_report_write(struct sim_record *const *recs, int n, const char *path);

#endif
