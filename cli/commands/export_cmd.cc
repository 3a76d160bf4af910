// farmctl export-index DIR [--from URL]: farmd's package index as static files
// (cli/export/index_export.h). Reads farmd's HTTP side, as pip does; needs no token, except
// to ask the farmd --server names for that HTTP address when --from is left out.
#include <ostream>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/export/index_export.h"
#include "common/flags.h"
#include "common/fs.h"

namespace farm::cli {

namespace {

// Where the farmd farmctl is pointed at serves HTTP (GetServerInfo).
Result<std::string> FarmHttpUrl(const FarmConnector& connect) {
  FARM_ASSIGN_OR_RETURN(auto client, connect());
  farm::v1::ServerInfo info;
  FARM_RETURN_IF_ERROR(client->Call(&FarmStub::GetServerInfo, {}, &info));
  if (info.http_url().empty()) {
    return Status::FailedPrecondition("farmd at " + client->address() +
                                      " serves no HTTP (farmd --http-listen): nothing to export");
  }
  return info.http_url();
}

}  // namespace

Status ExportIndexCommand(const Flags& flags, std::ostream& out, const FarmConnector& connect) {
  if (flags.positionals().size() != 2 || (!flags.Has("from") && !connect)) {
    return Status::InvalidArgument(
        "usage: farmctl export-index DIR [--from http://FARMD:PORT] [--base-url URL] [--force]"
        " (without --from, the HTTP address of the farmd --server names)");
  }
  std::string from = flags.Get("from");
  if (from.empty()) {
    FARM_ASSIGN_OR_RETURN(from, FarmHttpUrl(connect));
    if (flags.Get("output") != "json")
      out << "exporting from " << from << " (farmd's HTTP address)\n";
  }
  exporter::ExportOptions options{.farm_url = from,
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
