// Local version labels for built wheels: renders a recipe's label template for one matrix
// cell and rewrites a wheel so that the label is in every place an installer looks — the
// METADATA Version, the .dist-info (and .data) directory names, RECORD (with the new
// METADATA hash) and the file name. A label only in the file name breaks pip and uv.
//
// The rewrite reads and writes the zip with libarchive, entry by entry in the original
// order; file contents other than METADATA and RECORD are copied byte for byte, and the
// output is deterministic (same input and label give the same bytes), so a rewrite that is
// repeated after a crash yields the same sha256. Stateless; concurrent calls on different
// files are safe.
#ifndef FARM_COMMON_WHEEL_RELABEL_H_
#define FARM_COMMON_WHEEL_RELABEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace farm::wheel {

// Fills "{name}" placeholders of `label_template` from `vars` ("cu{cuda_nodot}torch{torch}"
// with cuda_nodot=130, torch=2.8 gives "cu130torch2.8"). On success returns the label in
// PEP 440 normal form (lowercase, '-' and '_' turned into '.'); InvalidArgument for an
// unknown or unterminated placeholder, or a result that is not a valid local label
// ([a-z0-9] segments separated by single dots). An empty template gives "".
Result<std::string> RenderLocalLabel(const std::string& label_template,
                                     const std::map<std::string, std::string>& vars);

// The template variables of one matrix cell: python, python_nodot ("311"), torch,
// torch_nodot ("28"), cuda, cuda_nodot ("130"), cuda_major ("13"), platform.
std::map<std::string, std::string> CellLabelVars(const std::string& python,
                                                 const std::string& torch, const std::string& cuda,
                                                 const std::string& platform);

// `version` without its dots, as labels and tags write it ("13.0" gives "130").
std::string NoDot(std::string_view version);

// True when `label` is a PEP 440 local label in normal form.
bool IsValidLocalLabel(const std::string& label);

// `version` ("2.2.0" or "2.2.0+cu128") with its local label replaced by `label`
// ("2.2.0+cu130"); the public version alone when `label` is empty.
std::string WithLocalLabel(const std::string& version, const std::string& label);

struct RelabelResult {
  std::string path;      // the wheel to publish: `in_path` itself when unchanged
  std::string filename;  // its file name
  std::string version;   // the version it now carries, "0.1.0+cu130"
  bool rewritten = false;
};

// Makes a wheel whose version is `label` applied to the version of the wheel at `in_path`.
// When the wheel already carries that version (the package applied the label itself, or
// the label is empty and it carries none), returns `in_path` unchanged. Otherwise writes
// the rewritten wheel into `out_dir` (which must exist) under its new file name. Fails
// with InvalidArgument for a wheel without exactly one top-level *.dist-info holding
// METADATA and RECORD, a malformed RECORD, or an invalid label; DataLoss when an entry's
// size differs from its header.
Result<RelabelResult> RelabelWheel(const std::string& in_path, const std::string& label,
                                   const std::string& out_dir);

// PEP 825 variant labels: 1 to 16 of [0-9a-z_.].
bool IsVariantLabel(std::string_view label);

// Writes the PEP 825 variant wheel of the wheel at `in_path` into `out_dir`: its version
// without the local label (a variant-aware installer chooses among the variants of one
// version), `label` after the platform tag in the file name, and `variant_json` as
// <dist-info>/variant.json, listed in RECORD. Deterministic, like RelabelWheel. Fails
// with InvalidArgument for an invalid label and as RelabelWheel does for the wheel.
Result<RelabelResult> MakeVariantWheel(const std::string& in_path, const std::string& label,
                                       const std::string& variant_json, const std::string& out_dir);

}  // namespace farm::wheel

#endif  // FARM_COMMON_WHEEL_RELABEL_H_
