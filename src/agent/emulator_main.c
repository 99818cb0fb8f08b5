/* emulator_main.c: the castor-job-emulator program: the profile from argv, the replica's rank,
 * sizes and configuration from the environment castor-node gives it, then emu_run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/emulator.h"
#include "sim/app.h"
#include "util/log.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: castor-job-emulator [--profiles DIR] APP\n"
            "\n"
            "One replica of an emulated training job: replays the measured profile APP (a name\n"
            "under DIR, by default the bundled data/profiles, or a folder path) in real time\n"
            "scaled by CASTOR_EMULATOR_SPEED, checkpoints to " EMU_CKPT_FILE " in its folder\n"
            "and resumes from it; rank 0 reports to CASTOR_URL. Environment (docs/local.md):\n"
            "  CASTOR_JOB, CASTOR_RANK (0), CASTOR_WORLD_SIZE (1), CASTOR_LOCAL_WORLD_SIZE,\n"
            "  CASTOR_LOCAL_BSZ, CASTOR_ACCUM_STEPS, CASTOR_CHECKPOINT_INTERVAL (600),\n"
            "  CASTOR_URL, CASTOR_JOB_TOKEN or CASTOR_JOB_TOKEN_FILE, CASTOR_EMULATOR_SPEED (1),\n"
            "  CASTOR_EMULATOR_REPORT_S (30), CASTOR_EMULATOR_EPOCHS (the profile's),\n"
            "  CASTOR_EMULATOR_FINISH_WAIT_S (60), CASTOR_EMULATOR_CRASH_AT (0: never),\n"
            "  CASTOR_EMULATOR_STOP_S (0: the checkpoint on SIGTERM written at once),\n"
            "  CASTOR_EMULATOR_DIR (.), CASTOR_EMULATOR_LOG_LEVEL (info)\n");
}

int main(int argc, char **argv)
{
    const char *profiles = getenv("CASTOR_PROFILES"), *name = NULL;
    struct emu_config c = {0};
    struct error e = {0};
    struct app *app = NULL;
    struct log *log = NULL;
    int level = LOG_INFO;
    char dir[4096];
    int rc = 0, code = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--profiles") == 0 && i + 1 < argc) {
            profiles = argv[++i];
        } else if (argv[i][0] != '-' && !name) {
            name = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!name) {
        usage(stderr);
        return 2;
    }
    if (strchr(name, '/'))
        snprintf(dir, sizeof(dir), "%s", name);
    else
        snprintf(dir, sizeof(dir), "%s/%s",
                 profiles && profiles[0] ? profiles : CASTOR_DATADIR "/profiles", name);
    c.job = getenv("CASTOR_JOB");
    c.url = getenv("CASTOR_URL");
    c.dir = getenv("CASTOR_EMULATOR_DIR");
    if (!c.dir || !c.dir[0])
        c.dir = ".";
    c.timeout_s = 5;
    rc = agent_env_log_level("CASTOR_EMULATOR_LOG_LEVEL", LOG_INFO, &level, &e);
    if (rc == 0)
        rc = app_load(dir, &app, &e);
    if (rc == 0)
        rc = agent_env_int("CASTOR_WORLD_SIZE", 1, 1, 1000000, &c.world_size, &e);
    if (rc == 0)
        rc = agent_env_int("CASTOR_RANK", 0, 0, c.world_size - 1, &c.rank, &e);
    if (rc == 0)
        rc = agent_env_int("CASTOR_LOCAL_WORLD_SIZE", c.world_size, 1, c.world_size,
                           &c.local_world_size, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_LOCAL_BSZ", NAN, 1e-9, 1e9, &c.local_bsz, &e);
    if (rc == 0)
        rc = agent_env_int("CASTOR_ACCUM_STEPS", -1, 0, 1000000, &c.accum_steps, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_EMULATOR_SPEED", 1, 1e-3, 1e7, &c.speed, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_CHECKPOINT_INTERVAL", 600, 1e-3, 1e9, &c.checkpoint_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_EMULATOR_REPORT_S", 30, 1e-3, 1e9, &c.report_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_EMULATOR_FINISH_WAIT_S", 60, 0, 86400, &c.finish_wait_s, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_EMULATOR_CRASH_AT", 0, 0, 1e12, &c.crash_at, &e);
    if (rc == 0)
        rc = agent_env_double("CASTOR_EMULATOR_STOP_S", 0, 0, 3600, &c.stop_s, &e);
    if (rc == 0)
        rc = agent_env_int("CASTOR_EMULATOR_EPOCHS", 0, 0, app->max_epochs, &c.epochs, &e);
    if (rc == 0)
        rc = agent_env_secret("CASTOR_JOB_TOKEN", "CASTOR_JOB_TOKEN_FILE", (char **)&c.job_token,
                              &e);
    if (rc < 0) {
        char buf[512];

        fprintf(stderr, "castor-job-emulator: %s\n", err_format(&e, buf, sizeof(buf)));
        goto out;
    }
    c.app = app;
    if (log_new(stderr, (enum log_level)level, &log) < 0)
        goto out;
    c.log = log;
    rc = emu_run(&c);
    if (rc < 0)
        fprintf(stderr, "castor-job-emulator: %s\n", err_str(rc));
    else
        code = rc == EMU_CRASHED ? 1 : rc == EMU_STOPPED ? 75 : 0; /* 75: restart me */
out:
    agent_secret_free((char *)c.job_token);
    log_free(log);
    app_free(app);
    return code;
}
