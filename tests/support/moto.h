/* moto.h: moto's server (the PyPI package moto, an implementation of AWS castor did not write)
 * for tests: started as `moto_server` on a free loopback port with request authentication on
 * (INITIAL_NO_AUTH_ACTION_COUNT), an IAM user allowed every EC2 action and castor's two Service
 * Quotas reads made through the first unauthenticated actions, its key handed back; stopped by
 * its pid. */
#ifndef CASTOR_TESTS_MOTO_H
#define CASTOR_TESTS_MOTO_H

#include <stddef.h>
#include <sys/types.h>

struct moto {
    pid_t pid; /* -1 when not running */
    char url[64];
    char akid[64], secret[128]; /* the IAM user's key */
};

/* The moto_server program: $CASTOR_MOTO_SERVER, else <source>/.venv/bin/moto_server (found
 * from data_dir, the tests' data folder), into buf. 1 when it is there and executable. */
int moto_find(const char *data_dir, char *buf, size_t size);

/* Start moto_server at path and make its user. 0, or -1 (a message on stderr; m->pid -1). Its
 * output goes to /dev/null unless CASTOR_MOTO_VERBOSE is set. */
int moto_start(const char *path, struct moto *m);

/* SIGTERM it and wait for it to exit, SIGKILLing it after 10 s. */
void moto_stop(struct moto *m);

/* Without moto: 1 (a failure) under CI (CI set), else 77 (skipped), with a line on stderr naming
 * the test and the missing path. */
int moto_missing(const char *test, const char *path);

/* The server of a test program's group of tests, between moto_group_start and moto_group_stop
 * (cmocka group set-up and tear-down; state unused): moto_server found under the tests' data
 * folder as moto_find finds it, and started. */
extern struct moto moto_group;
int moto_group_start(void **state);
int moto_group_stop(void **state);

#endif
