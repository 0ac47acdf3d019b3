// Fuzzes what a stranger controls on the wire: the HTTP request head and
// body as the listener parses them (the same Beast parser, header and body
// limits), then the body through the strict JSON decoder of every route.
// Any crash, leak, or undefined behaviour is a finding; refusals are fine.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/codec.h"

namespace http = boost::beast::http;
using namespace nodeplane;

namespace {

// Every message a route body can be read as: what nodes send (strictly)
// and what the node reads back (leniently).
template <class... M>
void DecodeAs(std::string_view body) {
  ((void)protocol::Decode<M>(body), ...);
}
void DecodeEveryRouteBody(std::string_view body) {
  using namespace protocol;
  DecodeAs<RegisterRequest, CommandResult, EpochBody, AdvanceBody, ReleaseBody, FailureBody, ReconcileBody, EmptyBody,
           EnrollBody, RenewBody, DescribeBody, JitBody, RemoveRunnerBody>(body);
  DecodeAs<RegisterResponse, Command, LeaseReply, LaunchedReply, CaReply, EnrollReply, RenewReply, JitReply,
           ErrorReply>(body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // The raw bytes as a body, whatever the parser makes of them as a request.
  DecodeEveryRouteBody(input);
  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(1 << 20);
  boost::beast::error_code ec;
  size_t used = parser.put(boost::asio::buffer(input.data(), input.size()), ec);
  if (!ec && !parser.is_done() && used < input.size()) {
    parser.put(boost::asio::buffer(input.data() + used, input.size() - used), ec);
  }
  if (!ec && parser.is_header_done()) {
    const auto& req = parser.get();
    (void)req.target();
    (void)req.method_string();
    if (parser.is_done()) DecodeEveryRouteBody(req.body());
  }
  return 0;
}
