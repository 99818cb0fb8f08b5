/* agent.h: what the worker-side programs (castor-node, castor-job-emulator) share: numbers and
 * secrets from their environment, and requests to the controller with a bearer token. */
#ifndef CASTOR_AGENT_AGENT_H
#define CASTOR_AGENT_AGENT_H

#include "util/error.h"

struct http_client;
struct http_client_response;

/*
 * The number in variable name into *out: def when it is unset or empty. Errors (e names the
 * variable, never quotes a value): ERR_PARSE (not a number), ERR_RANGE (outside [lo, hi] or not
 * finite); *out written only on success.
 */
int agent_env_double(const char *name, double def, double lo, double hi, double *out,
                     struct error *e);

/* As agent_env_double for a whole number (ERR_PARSE for "1.5"). */
int agent_env_int(const char *name, int def, int lo, int hi, int *out, struct error *e);

/* The log level named by variable name ("debug", "info", "warn", "error") into *out: def when it
 * is unset or empty. ERR_INVAL (another word; e names the variable); *out written only on
 * success. */
int agent_env_log_level(const char *name, int def, int *out, struct error *e);

/*
 * A secret from the environment: variable name itself, else the file named by variable
 * file_name (one line; a final newline dropped; a file that others than its owner may read is
 * refused, as the controller's token files are). On success *out is a new string (the caller
 * wipes and frees it with agent_secret_free), or NULL when neither variable is set. Errors (e
 * names the variable or file, never the secret): ERR_INVAL (a group- or world-readable file, an
 * empty secret), ERR_NOENT and ERR_IO (the file), ERR_NOMEM; *out untouched.
 */
int agent_env_secret(const char *name, const char *file_name, char **out, struct error *e);

/* Wipe and free a secret from agent_env_secret. NULL is ignored. */
void agent_secret_free(char *secret);

/*
 * The local address of this machine's route to the controller at url (what its peers on that
 * network reach it by), as text into buf (size bytes): a UDP socket is connected to the
 * controller's address (no packet is sent) and its own address read. ERR_INVAL (not an http(s)
 * URL), ERR_NOENT (the host does not resolve), ERR_IO (no route), ERR_RANGE (buf too small); buf
 * written only on success.
 */
int agent_route_address(const char *url, char *buf, size_t size);

/*
 * One request to the controller at base (its URL; a final '/' is dropped) + path with
 * "Authorization: Bearer token" and
 * a JSON body (NULL: none), within timeout_s, TLS trusting ca_file (NULL: the system's). The
 * header is wiped after use. On success *resp is the caller's (http_client_response_clear),
 * whatever the status. Errors: http_client_do's, with e saying what (never the token).
 */
int agent_call(struct http_client *http, const char *base, const char *token, const char *method,
               const char *path, const char *body, double timeout_s, const char *ca_file,
               struct http_client_response *resp, struct error *e);

#endif
