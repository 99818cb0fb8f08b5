/* attest.h: a node's proof, at registration, that it is the cloud instance it says it is, so
 * that the shared node token alone cannot register made-up nodes or another instance's id: on EC2
 * the instance identity document with its RSA signature (the metadata service's
 * /latest/dynamic/instance-identity/document and .../signature), checked against AWS's RSA
 * certificate for the region; on Compute Engine the instance's identity token (a JWT signed by
 * Google, format=full), checked against Google's certificates. */
#ifndef CASTOR_CONTROL_ATTEST_H
#define CASTOR_CONTROL_ATTEST_H

#include <stddef.h>

#define ATTEST_DOCUMENT_MAX 4096  /* bytes of an identity document */
#define ATTEST_SIGNATURE_MAX 2048 /* characters of its base64 signature */

/* What a document must satisfy. All borrowed. */
struct attest_aws {
    const char *certificate; /* PEM: AWS's RSA certificate for the region (or any RSA key's) */
    size_t certificate_len;
    const char *account; /* the AWS account the instance must be in; NULL: any */
    const char *region;  /* the region it must be in; NULL: any */
};

/*
 * 0 when signature (base64 of an RS256 signature) signs the len bytes of document under cfg's
 * certificate, and the document is a JSON object whose instanceId is instance_id (and accountId
 * and region are cfg's, where set). Else ERR_PERM, with why (size bytes, always written on error)
 * saying what did not hold, fit for a 403 answer (it quotes no more than the document's ids);
 * ERR_PARSE for a signature that is not base64; ERR_INVAL (NULL arguments, no certificate);
 * ERR_NOMEM; ERR_INTERNAL (the certificate cannot be read).
 */
int attest_aws_check(const struct attest_aws *cfg, const char *instance_id, const char *document,
                     size_t len, const char *signature, char *why, size_t size);

#define ATTEST_TOKEN_MAX 8192 /* characters of a Compute Engine identity token */
#define ATTEST_SKEW_S 300.0   /* clocks may differ this much (a token's iat and exp) */

/* What a Compute Engine identity token must satisfy. Borrowed. */
struct attest_gcp {
    /* Google's signing certificates as its v1 endpoint gives them
     * (https://www.googleapis.com/oauth2/v1/certs): a JSON object of key id to PEM certificate.
     * A file, read at each check, so that a timer may keep it fresh as Google rotates its keys. */
    const char *certificates_path;
    const char *audience; /* the aud the token was asked for (castor-node: its CASTOR_URL) */
    const char *project;  /* the project id it must be in; NULL: any */
};

/*
 * 0 when token is an RS256 JWT signed under the certificates' key its header names, issued by
 * Google (iss https://accounts.google.com) for cfg's audience, not expired at now nor issued after
 * it (ATTEST_SKEW_S either way), whose google.compute_engine claims name instance_id as castor
 * names Compute Engine instances ("<zone>.<instance_name>") and cfg's project where set. Errors
 * as attest_aws_check: ERR_PERM with why for what did not hold; ERR_PARSE for a token that is not
 * three base64url parts of JSON; ERR_INTERNAL for certificates that cannot be read (why says).
 */
int attest_gcp_check(const struct attest_gcp *cfg, const char *instance_id, const char *token,
                     double now, char *why, size_t size);

#endif
