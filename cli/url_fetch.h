// Reading a file or an http(s) URL for farmctl verify: the bytes go to a sink in blocks,
// so a wheel of gigabytes is hashed without being held. URLs are fetched with libcurl,
// following redirects (release and Hub downloads redirect to their storage).
#ifndef FARM_CLI_URL_FETCH_H_
#define FARM_CLI_URL_FETCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::cli {

bool IsUrl(std::string_view source);

struct FetchOptions {
  std::string ca_file;    // HTTPS: trust this CA (a farm with its own), else the system's
  int64_t max_bytes = 0;  // more is refused (InvalidArgument)
  std::string accept;     // the Accept header of an http(s) request, when set
};

// Streams `source` (a path or an http(s) URL) into `sink`. NotFound for a missing file or
// an HTTP 404; Unavailable when the server cannot be reached or answers another error.
Status Fetch(const std::string& source, const FetchOptions& options,
             const std::function<void(std::string_view)>& sink);

// The whole of `source`, at most options.max_bytes.
Result<std::string> FetchAll(const std::string& source, const FetchOptions& options);

// The file name a source names: the last path segment, percent-decoded for a URL.
std::string SourceFileName(const std::string& source);

}  // namespace farm::cli

#endif  // FARM_CLI_URL_FETCH_H_
