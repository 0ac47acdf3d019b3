// What the listener's OpenSSL context per I/O thread (http_server.cpp, note
// 8) is for: OpenSSL 3.0 parses a certificate (a client's, or the one a
// session ticket carries) through its decoder machinery, under read-write
// locks of the library context. Prints certificates parsed a second by 1..N
// threads, all in the process's default context, then each in its own.
//
//   cert-parse-bench [threads] [parses per thread]
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "pki/authority.h"

namespace {

// Parses/s with `threads` threads each parsing `n` copies of `der`, each in
// its own library context when `own` (made its default, as the listener's
// threads do).
double Rate(const std::string& der, int threads, int n, bool own) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      OSSL_LIB_CTX* library = own ? OSSL_LIB_CTX_new() : nullptr;
      if (own) OSSL_LIB_CTX_set0_default(library);
      for (int i = 0; i < n; ++i) {
        const auto* p = reinterpret_cast<const unsigned char*>(der.data());
        X509_free(d2i_X509(nullptr, &p, static_cast<long>(der.size())));
      }
      if (own) {
        OSSL_LIB_CTX_set0_default(nullptr);
        OSSL_LIB_CTX_free(library);
      }
    });
  }
  for (auto& w : workers) w.join();
  return threads * n / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int max_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  auto ca = nodeplane::pki::Authority::Create("bench", nodeplane::WallNowNs());
  if (!ca.ok()) return std::fprintf(stderr, "cert-parse-bench: %s\n", ca.status().ToString().c_str()), 1;
  auto node = ca->IssueNode("n1", nodeplane::WallNowNs());
  if (!node.ok()) return std::fprintf(stderr, "cert-parse-bench: %s\n", node.status().ToString().c_str()), 1;
  BIO* bio = BIO_new_mem_buf(node->first.data(), static_cast<int>(node->first.size()));
  X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  unsigned char* raw = nullptr;
  const int len = i2d_X509(cert, &raw);
  const std::string der(reinterpret_cast<char*>(raw), static_cast<size_t>(len));
  OPENSSL_free(raw);
  X509_free(cert);
  std::printf("parsing a node certificate (P-256, %d bytes of DER), %d per thread, %u cores\n", len, n,
              std::thread::hardware_concurrency());
  for (int threads = 1; threads <= max_threads; ++threads) {
    const double shared = Rate(der, threads, n, false), own = Rate(der, threads, n, true);
    std::printf("%d thread(s): one library context %.0f/s; one each %.0f/s\n", threads, shared, own);
  }
  return 0;
}
