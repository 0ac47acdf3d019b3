#include "wire/tls_socket_stream.h"

#include <openssl/err.h>

#include <boost/asio/ssl/error.hpp>
#include <cerrno>
#include <stdexcept>

namespace nodeplane::wire {

TlsSocketStream::TlsSocketStream(socket_type socket, SSL_CTX* ctx) : socket_(std::move(socket)), ssl_(SSL_new(ctx)) {
  if (ssl_ == nullptr) throw std::bad_alloc();
  socket_.non_blocking(true);
  SSL_set_fd(ssl_, static_cast<int>(socket_.native_handle()));
  SSL_set_accept_state(ssl_);
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

// The socket closes after the SSL object lets go of its descriptor.
TlsSocketStream::~TlsSocketStream() { SSL_free(ssl_); }

TlsSocketStream::Attempt TlsSocketStream::Handshake() {
  ERR_clear_error();
  return Classify(SSL_do_handshake(ssl_), 0);
}

TlsSocketStream::Attempt TlsSocketStream::Read(void* data, std::size_t size) {
  ERR_clear_error();
  std::size_t n = 0;
  const int r = SSL_read_ex(ssl_, data, size, &n);
  return Classify(r, n);
}

TlsSocketStream::Attempt TlsSocketStream::Write(const void* data, std::size_t size) {
  ERR_clear_error();
  std::size_t n = 0;
  const int r = SSL_write_ex(ssl_, data, size, &n);
  return Classify(r, n);
}

// (T4)
TlsSocketStream::Attempt TlsSocketStream::Classify(int result, std::size_t bytes) {
  if (result == 1) return Attempt{Step::kDone, bytes, {}};
  const int saved_errno = errno;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
      return Attempt{Step::kWantRead, 0, {}};
    case SSL_ERROR_WANT_WRITE:
      return Attempt{Step::kWantWrite, 0, {}};
    case SSL_ERROR_ZERO_RETURN:
      return Attempt{Step::kFailed, 0, boost::asio::error::eof};
    case SSL_ERROR_SYSCALL:
      if (saved_errno != 0) return Attempt{Step::kFailed, 0, {saved_errno, boost::system::system_category()}};
      return Attempt{Step::kFailed, 0, boost::asio::ssl::error::stream_truncated};
    default: {
      const unsigned long e = ERR_get_error();
      if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        return Attempt{Step::kFailed, 0, boost::asio::ssl::error::stream_truncated};
      }
      return Attempt{Step::kFailed, 0,
                     {static_cast<int>(e != 0 ? e : SSL_R_UNINITIALIZED), boost::asio::error::get_ssl_category()}};
    }
  }
}

char* TlsSocketStream::Scratch() {
  thread_local char scratch[kRecord];
  return scratch;
}

}  // namespace nodeplane::wire
