// Plain OpenSSL on loopback for tests that play one side of the wire and
// must see what the other side sent (its Certificate message, its tickets).
#pragma once

#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace nodeplane::wire {

inline int64_t Now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtx = std::unique_ptr<SSL_CTX, SslCtxFree>;

// A context holding `cert_pem` and `key_pem` and trusting `ca_pem`, as both
// sides of the wire are set up.
inline SslCtx Context(const SSL_METHOD* method, const std::string& ca_pem, const std::string& cert_pem,
                      const std::string& key_pem) {
  SslCtx ctx(SSL_CTX_new(method));
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  BIO* b = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), ca);
  X509_free(ca);
  b = BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size()));
  X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  b = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
  BIO_free(b);
  SSL_CTX_use_certificate(ctx.get(), cert);
  SSL_CTX_use_PrivateKey(ctx.get(), key);
  X509_free(cert);
  EVP_PKEY_free(key);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return ctx;
}

inline sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

}  // namespace nodeplane::wire
