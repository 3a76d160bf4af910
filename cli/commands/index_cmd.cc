// farmctl index make DIR: a folder of wheels made into a package index any static file
// server serves (cli/index/make_index.h, docs/first-index.md); no farmd needed.
#include <ostream>

#include "cli/index/make_index.h"
#include "common/flags.h"

namespace farm::cli {

Status IndexCommand(const Flags& flags, std::ostream& out) {
  const auto& args = flags.positionals();
  if (args.size() != 3 || args[1] != "make") {
    return Status::InvalidArgument("usage: farmctl index make DIR [--force]");
  }
  FARM_ASSIGN_OR_RETURN(index::MadeIndex made, index::MakeIndex(args[2], flags.Has("force")));
  for (const std::string& skipped : made.skipped) out << "skipped " << skipped << "\n";
  out << "indexed " << made.files << " file(s) of " << made.projects << " project(s) in "
      << made.simple_dir << "/ (PEP 503 and PEP 691 pages, sha256 on every link, PEP 658 "
      << "metadata of " << made.wheels_with_metadata << " wheel(s))\n"
      << "serve it: python3 -m http.server --directory " << args[2] << " 8000\n"
      << "then: farmd --upstream-index cu128=http://HOST:8000/simple/ (one index per torch "
         "CUDA variant; docs/first-index.md)\n";
  return Status::Ok();
}

}  // namespace farm::cli
