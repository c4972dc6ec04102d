// The only place C is visible. OpenSSL macros are not imported by Swift, so they are wrapped here as
// static inline functions with a `fp_` prefix.
#ifndef FASTPULL_COPENSSL_SHIM_H
#define FASTPULL_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>

static inline long fp_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long fp_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline long fp_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

static inline int fp_TLS1_2_VERSION(void) { return TLS1_2_VERSION; }

static inline long fp_SSL_MODE_AUTO_RETRY(void) { return SSL_MODE_AUTO_RETRY; }

#endif
