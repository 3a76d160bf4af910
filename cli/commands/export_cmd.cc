// farmctl export-index DIR --from URL: farmd's package index as static files
// (cli/export/index_export.h). Reads farmd's HTTP side, as pip does; needs no token.
#include <ostream>

#include "cli/export/index_export.h"
#include "common/flags.h"
#include "common/fs.h"

namespace farm::cli {

Status ExportIndexCommand(const Flags& flags, std::ostream& out) {
  if (flags.positionals().size() != 2 || !flags.Has("from")) {
    return Status::InvalidArgument(
        "usage: farmctl export-index DIR --from http://FARMD:PORT [--base-url URL] [--force]");
  }
  exporter::ExportOptions options{.farm_url = flags.Get("from"),
                                  .dir = flags.positionals()[1],
                                  .base_url = flags.Get("base-url"),
                                  .force = flags.Has("force")};
  auto http = exporter::MakeCurlIndexHttp(flags.Get("ca"));
  FARM_ASSIGN_OR_RETURN(exporter::ExportSummary s, exporter::ExportIndex(*http, options));
  if (flags.Get("output") == "json") {
    out << exporter::SummaryJson(s, options.base_url);
    return Status::Ok();
  }
  out << "exported " << s.views << " views (" << s.pages << " pages) and " << s.wheels
      << " wheels to " << s.dir << "\n"
      << "wheels: " << s.wheels_downloaded << " downloaded (" << fs::HumanBytes(s.bytes_downloaded)
      << "), " << s.wheels_reused << " reused from the previous export ("
      << fs::HumanBytes(s.bytes_reused) << ")\n"
      << "serve it: python3 -m http.server --directory " << s.dir << "; pip install --index-url "
      << (options.base_url.empty() ? std::string("http://HOST:PORT") : options.base_url)
      << "/<variant>/sm<cc>/simple/ PACKAGE\n";
  return Status::Ok();
}

}  // namespace farm::cli
