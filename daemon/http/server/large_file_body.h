// A Beast body that sends a file in 256 KiB reads. Beast's own file_body reads 4 KiB at a
// time, so every 4 KiB of a multi-gigabyte wheel cost a read, a write to the socket (and,
// over TLS, a record): serving from the pull-through cache topped out far below loopback
// speed (docs/benchmarks.md, "Pull-through cache"). Write-only: farmd never reads a request
// into a file.
#ifndef FARM_DAEMON_HTTP_SERVER_LARGE_FILE_BODY_H_
#define FARM_DAEMON_HTTP_SERVER_LARGE_FILE_BODY_H_

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/file.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>
#include <cstdint>
#include <memory>
#include <utility>

namespace farm::http {

struct LargeFileBody {
  static constexpr std::size_t kChunkBytes = 256 * 1024;

  // An open file and its size, taken when opened: the writer sends exactly that many bytes
  // (a blob is immutable once stored, so the length header stays true).
  class value_type {
   public:
    void open(const char* path, boost::beast::error_code& ec) {
      file_.open(path, boost::beast::file_mode::scan, ec);
      if (!ec) size_ = file_.size(ec);
    }
    std::uint64_t size() const { return size_; }

   private:
    friend struct LargeFileBody;
    boost::beast::file file_;
    std::uint64_t size_ = 0;
  };

  static std::uint64_t size(const value_type& body) { return body.size_; }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool kIsRequest, class Fields>
    writer(boost::beast::http::header<kIsRequest, Fields>& /*head*/, value_type& body)
        : body_(body), remaining_(body.size_), buffer_(new char[kChunkBytes]) {}

    void init(boost::beast::error_code& ec) { ec = {}; }

    // The next chunk, and whether more follow; none at the end. A file that shrank under
    // us is a short read, which ends the connection rather than send a wrong length.
    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& ec) {
      std::size_t want = static_cast<std::size_t>(
          std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(kChunkBytes)));
      if (want == 0) {
        ec = {};
        return boost::none;
      }
      std::size_t got = body_.file_.read(buffer_.get(), want, ec);
      if (ec) return boost::none;
      if (got == 0) {
        ec = boost::beast::http::error::short_read;
        return boost::none;
      }
      remaining_ -= got;
      return std::make_pair(const_buffers_type(buffer_.get(), got), remaining_ > 0);
    }

   private:
    value_type& body_;
    std::uint64_t remaining_;
    std::unique_ptr<char[]> buffer_;
  };
};

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_LARGE_FILE_BODY_H_
