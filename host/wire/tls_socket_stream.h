// A server-side TLS stream that lets OpenSSL read and write the socket
// itself, for the listener's connections (http_server.cpp only: this header
// brings in Asio and OpenSSL).
//
// Why not asio::ssl::stream. Asio's stream runs OpenSSL over a memory BIO
// pair and keeps its own record buffers besides: about 70 KiB allocated per
// connection from the moment it is accepted, whether or not a byte is in
// flight. A fleet is tens of thousands of connections that sit idle under a
// parked poll, so that buffer space is most of the control plane's memory
// (docs/performance.md). Here the SSL object owns the descriptor
// (SSL_set_fd, non-blocking) and, with SSL_MODE_RELEASE_BUFFERS, holds no
// record buffer between records: an idle connection costs the SSL object
// and the socket.
//
// How an operation runs (T1–T4):
//   (T1) Every operation first asks OpenSSL (SSL_read_ex, SSL_write_ex,
//        SSL_do_handshake). Only when it answers WANT_READ or WANT_WRITE does
//        the operation wait for the socket to become readable or writable,
//        then asks again. Bytes OpenSSL already holds are therefore returned
//        without touching the socket. The one exception is a read that finds
//        OpenSSL holding nothing (SSL_has_pending, read-ahead bytes
//        included): asking would only cost a read() that says EAGAIN, so it
//        waits first. The wait re-arms the socket in the kernel, which
//        reports bytes already there at once, so none is missed.
//   (T2) An operation that completes on its first attempt is completed
//        through a post to its executor, never inside the initiating call,
//        as Asio's asynchronous model requires.
//   (T3) One read and one write may be outstanding at once (the listener
//        watches for a client's departure while it writes a response); both
//        run on the connection's strand, so OpenSSL is never entered from
//        two threads. OpenSSL allows a read and a write to be interleaved on
//        one SSL object; a write retried after WANT_WRITE may find its bytes
//        at another address (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER) since a
//        buffer sequence is gathered into per-thread scratch space.
//   (T4) Errors: a close_notify reads as asio::error::eof; a peer that just
//        closed its socket reads as asio::ssl::error::stream_truncated; any
//        other failure carries OpenSSL's or the system's code. Each call
//        clears the thread's OpenSSL error queue first, so an error is
//        always this connection's.
//
// Deadlines are not the stream's business: the connection closes its socket
// when its own timer fires, which fails whatever wait is pending.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

namespace nodeplane::wire {

class TlsSocketStream {
 public:
  using socket_type = boost::asio::ip::tcp::socket;
  using next_layer_type = socket_type;
  using executor_type = socket_type::executor_type;

  // Takes the accepted socket; `ctx` supplies certificates and verification.
  TlsSocketStream(socket_type socket, SSL_CTX* ctx);
  ~TlsSocketStream();
  TlsSocketStream(const TlsSocketStream&) = delete;
  TlsSocketStream& operator=(const TlsSocketStream&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  socket_type& next_layer() { return socket_; }
  SSL* native_handle() { return ssl_; }

  // The server's side of the handshake. Signature: void(error_code).
  template <typename Token>
  auto async_handshake(Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code)>(
        HandshakeOp{this}, token, socket_);
  }

  // Signature: void(error_code, size_t), as AsyncReadStream asks.
  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code, std::size_t)>(
        ReadOp<MutableBuffers>{this, buffers}, token, socket_);
  }

  // Signature: void(error_code, size_t), as AsyncWriteStream asks.
  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::system::error_code, std::size_t)>(
        WriteOp<ConstBuffers>{this, buffers}, token, socket_);
  }

 private:
  // What one attempt of an OpenSSL call came to.
  enum class Step { kDone, kWantRead, kWantWrite, kFailed };
  struct Attempt {
    Step step;
    std::size_t bytes = 0;
    boost::system::error_code error;
  };

  Attempt Handshake();
  Attempt Read(void* data, std::size_t size);
  Attempt Write(const void* data, std::size_t size);
  Attempt Classify(int result, std::size_t bytes);
  // Gathers up to one record's worth of `buffers` into scratch space (T3);
  // a single buffer is used where it lies.
  template <typename ConstBuffers>
  static boost::asio::const_buffer Gather(const ConstBuffers& buffers);

  // (T1)/(T2) for every operation: `attempt()` until it is done or failed,
  // waiting on the socket in between.
  template <typename Derived>
  struct Op {
    TlsSocketStream* stream;
    bool waited = false;  // false: still inside the initiating call (T2)
    bool finished = false;
    Attempt last{Step::kFailed, 0, {}};

    // Whether the first attempt may succeed without the socket: true but
    // for a read (T1's exception).
    bool worth_asking_first() const { return true; }

    template <typename Self>
    void operator()(Self& self, boost::system::error_code wait_error = {}) {
      if (finished) return static_cast<Derived*>(this)->Complete(self, last);
      if (wait_error) return static_cast<Derived*>(this)->Complete(self, Attempt{Step::kFailed, 0, wait_error});
      if (!waited && !static_cast<Derived*>(this)->worth_asking_first()) {
        waited = true;
        return stream->socket_.async_wait(socket_type::wait_read, std::move(self));
      }
      last = static_cast<Derived*>(this)->attempt();
      if (last.step == Step::kWantRead || last.step == Step::kWantWrite) {
        waited = true;
        return stream->socket_.async_wait(last.step == Step::kWantRead ? socket_type::wait_read
                                                                        : socket_type::wait_write,
                                          std::move(self));
      }
      if (waited) return static_cast<Derived*>(this)->Complete(self, last);
      finished = true;
      boost::asio::post(std::move(self));
    }
  };

  struct HandshakeOp : Op<HandshakeOp> {
    Attempt attempt() { return this->stream->Handshake(); }
    template <typename Self>
    void Complete(Self& self, const Attempt& a) {
      self.complete(a.error);
    }
  };

  template <typename MutableBuffers>
  struct ReadOp : Op<ReadOp<MutableBuffers>> {
    ReadOp(TlsSocketStream* s, const MutableBuffers& b) : Op<ReadOp>{s}, buffers(b) {}
    MutableBuffers buffers;
    bool worth_asking_first() const {
      return boost::asio::buffer_size(buffers) == 0 || SSL_has_pending(this->stream->ssl_) == 1;
    }
    Attempt attempt() {
      for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers);
           ++it) {
        boost::asio::mutable_buffer b(*it);
        if (b.size() > 0) return this->stream->Read(b.data(), b.size());
      }
      return Attempt{Step::kDone, 0, {}};
    }
    template <typename Self>
    void Complete(Self& self, const Attempt& a) {
      self.complete(a.error, a.bytes);
    }
  };

  template <typename ConstBuffers>
  struct WriteOp : Op<WriteOp<ConstBuffers>> {
    WriteOp(TlsSocketStream* s, const ConstBuffers& b) : Op<WriteOp>{s}, buffers(b) {}
    ConstBuffers buffers;
    Attempt attempt() {
      boost::asio::const_buffer b = Gather(buffers);
      if (b.size() == 0) return Attempt{Step::kDone, 0, {}};
      return this->stream->Write(b.data(), b.size());
    }
    template <typename Self>
    void Complete(Self& self, const Attempt& a) {
      self.complete(a.error, a.bytes);
    }
  };

  static char* Scratch();
  static constexpr std::size_t kRecord = 16 * 1024;  // TLS's largest plaintext record

  socket_type socket_;
  SSL* ssl_;
};

template <typename ConstBuffers>
boost::asio::const_buffer TlsSocketStream::Gather(const ConstBuffers& buffers) {
  auto it = boost::asio::buffer_sequence_begin(buffers);
  const auto end = boost::asio::buffer_sequence_end(buffers);
  while (it != end && boost::asio::const_buffer(*it).size() == 0) ++it;
  if (it == end) return {};
  boost::asio::const_buffer first(*it);
  auto next = it;
  if (first.size() >= kRecord || ++next == end) return first;
  char* scratch = Scratch();
  std::size_t used = 0;
  for (; it != end && used < kRecord; ++it) {
    boost::asio::const_buffer b(*it);
    const std::size_t n = std::min(b.size(), kRecord - used);
    std::memcpy(scratch + used, b.data(), n);
    used += n;
  }
  return {scratch, used};
}

}  // namespace nodeplane::wire
