// The PEP 825 variants path, beside the pip-compatible views (docs/index.md, "PEP 825
// variant wheels"): /variants/<variant>/simple/ lists the wheels of /<variant>/simple/
// under PEP 825 names, one per version, tags and variant label. Each is the stored wheel
// with its local version label dropped (a variant-aware installer picks among the
// variants of one version), the variant label after its platform tag, and
// <dist-info>/variant.json; each project page also links the
// {name}-{version}-variants.json of every version it lists.
//
// Properties follow the NVIDIA variant provider's draft: `nvidia :: sm_arch ::
// {major}{minor}_real` per SASS image and `{major}0_virtual` per PTX image (it has no a/f
// notion, and offers a GPU the virtual value of its own major only), and
// `nvidia :: cuda_version_lower_bound :: <the cell's CUDA>`. A label names the property
// set: "sm80.86.89", "sm120.121v120" (v: the PTX majors), "cu130" without device code,
// "null" without properties; past 16 characters "sm<lo>to<hi>.<4 hex of the properties>".
//
// The variant wheels are made on first request, kept under a directory of farmd's (the
// rewrite is deterministic, so one made again has the same bytes) and served from there.
// Thread-safe.
#ifndef FARM_DAEMON_HTTP_INDEX_VARIANT_INDEX_H_
#define FARM_DAEMON_HTTP_INDEX_VARIANT_INDEX_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "daemon/http/index/index_catalog.h"
#include "daemon/http/server/http_message.h"

namespace farm::http {

// The PEP 825 variant of one listed file.
struct VariantOfFile {
  std::string label;
  std::string properties_json;  // {"nvidia": {...}}, the value under variants[label]
};
VariantOfFile VariantFor(const IndexFile& file);

// Makes and keeps the variant wheels under `dir`.
class VariantWheels {
 public:
  explicit VariantWheels(std::string dir) : dir_(std::move(dir)) {}

  struct File {
    std::string filename;
    std::string sha256;
    int64_t size = 0;
    std::string path;
  };
  // The variant wheel of `file` (labelled `label`, holding `variant_json`), made when it
  // is not there yet. Unavailable without a directory; errors of the rewrite otherwise.
  Result<File> Get(IndexCatalog& catalog, const IndexFile& file, const std::string& label,
                   const std::string& variant_json);

 private:
  const std::string dir_;
  std::mutex mu_;       // guards made_
  std::mutex make_mu_;  // one rewrite at a time
  std::map<std::string, File> made_;
};

// Answers /variants/... paths; nullopt for any other path.
std::optional<Response> HandleVariantIndex(IndexCatalog& catalog, VariantWheels& wheels,
                                           const Request& req);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_INDEX_VARIANT_INDEX_H_
