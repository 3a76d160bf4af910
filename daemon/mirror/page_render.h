// The project pages farmd's pull-through cache answers (PEP 503 HTML, PEP 691 JSON), made
// from what an upstream listed with every file's URL pointing at the farm. Pure
// functions; safe from any thread.
#ifndef FARM_DAEMON_MIRROR_PAGE_RENDER_H_
#define FARM_DAEMON_MIRROR_PAGE_RENDER_H_

#include <functional>
#include <string>
#include <vector>

#include "common/upstream/simple_index.h"

namespace farm::mirror {

// The sha256 of the PEP 658 metadata file the farm serves for a listed file, "" when it
// serves none.
using MetadataDigest = std::function<std::string(const upstream::IndexFile&)>;

// Renders `files` as a PEP 691 JSON (`json`) or PEP 503 HTML project page whose file URLs
// are files_base + sha256 + "/" + filename (the filename percent-encoded). A file whose
// `metadata` digest is not empty is listed with it: in HTML under both names installers
// read, PEP 714's `data-core-metadata` and PEP 658's `data-dist-info-metadata` (pip before
// 23.1, Debian 12's 23.0.1, reads that one alone); in JSON as `core-metadata` only, since
// those same pips fail outright on a JSON `dist-info-metadata` (the bug PEP 714 renamed
// the key for): the routes answer them HTML (upstream_routes.h). Hashes, sizes,
// requires-python, yanked and upload-time are as listed.
std::string RenderProjectPage(const std::string& project,
                              const std::vector<upstream::IndexFile>& files, bool json,
                              const std::string& files_base, const MetadataDigest& metadata);

}  // namespace farm::mirror

#endif  // FARM_DAEMON_MIRROR_PAGE_RENDER_H_
