/* attest.h: a node's proof, at registration, that it is the cloud instance it says it is: an EC2
 * instance identity document with its RSA signature (the metadata service's
 * /latest/dynamic/instance-identity/document and .../signature), checked against AWS's RSA
 * certificate for the region, so that the shared node token alone cannot register made-up nodes
 * or another instance's id. */
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

#endif
