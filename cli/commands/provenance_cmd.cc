// farmctl verify: checks a wheel (a file or a URL: the farm's index, a GitHub release, a
// Hub folder) against the farm's signed provenance and prints what was proven where; no
// farmd needed. farmctl keys: the farm's public signing keys, rotation and revocation.
#include <boost/json.hpp>
#include <cstring>
#include <tuple>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/url_fetch.h"
#include "common/clock.h"
#include "common/flags.h"
#include "common/provenance/pep740.h"
#include "common/provenance/verify.h"
#include "common/sha256.h"
#include "common/wheel/wheel_name.h"

namespace farm::cli {
namespace {

namespace json = boost::json;
using provenance::KeySet;

constexpr int64_t kMaxWheelBytes = 16LL << 30;
constexpr int64_t kMaxDocumentBytes = 4 << 20;
constexpr char kKeysPath[] = "/api/v1/provenance/keys";
constexpr char kProjectsPath[] = "/api/v1/projects/";

// The farm's key set URL for a wheel of its index ("https://farm/files/<sha>/<name>").
std::string KeysUrlOf(const std::string& wheel) {
  size_t files = wheel.find("/files/");
  if (!IsUrl(wheel) || files == std::string::npos) return "";
  return wheel.substr(0, files) + kKeysPath;
}

// A .intoto.jsonl file or a PEP 740 provenance object (envelope lines hold their
// statements in Base64, so only the latter spells this member name).
Result<std::vector<provenance::Envelope>> ParseProvenance(const std::string& text) {
  if (text.find("\"attestation_bundles\"") != std::string::npos) {
    return provenance::ParsePep740Provenance(text);
  }
  return provenance::ParseEnvelopeLines(text);
}

std::string KeyState(const KeySet& keys, const std::string& keyid) {
  const provenance::PublicKey* k = keys.Find(keyid);
  return k == nullptr ? "?" : provenance::KeyStateName(k->state);
}

std::string Text(const provenance::WheelVerification& v, const KeySet& keys,
                 const std::string& name, const std::string& sha256, int64_t size,
                 const std::string& wheel, const std::string& keys_from) {
  std::string out = "wheel       " + name + "\n" + "sha256      " + sha256 + " (" +
                    std::to_string(size) + " bytes, from " + wheel + ")\n" + "keys        " +
                    keys_from + " (farm " + keys.farm_id + ", " + std::to_string(keys.keys.size()) +
                    " keys)\n";
  if (v.build) {
    const provenance::BuildSummary& b = *v.build;
    out += "built by    " + b.builder_id + ", signed by key " + v.build_keyid.substr(0, 16) + " (" +
           KeyState(keys, v.build_keyid) + ")\n";
    out += "worker      " + b.worker +
           "; GPUs: " + (b.worker_gpus.empty() ? "none" : b.worker_gpus) + "; driver " +
           (b.driver.empty() ? "none" : b.driver) +
           "; toolkits: " + (b.toolkits.empty() ? "none" : b.toolkits) + "\n";
    out += "recipe      " + b.recipe + "\n";
    out += "project     " + (b.project.empty() ? "not named" : b.project) + ", owner " +
           (b.project_owner.empty() ? "not named" : b.project_owner) + "\n";
    out += "source      " + b.source + "\n" + "cell        " + b.cell + "\n";
    out += "inputs      " + std::to_string(b.patches) + " patch(es), " +
           std::to_string(b.consumed_wheels) + " wheel(s) from other builds\n";
    out += "run         " + b.started + " .. " + b.finished + ", log sha256 " + b.log_sha256 + "\n";
  }
  for (const auto& sv : v.validations) {
    const provenance::ValidationSummary& s = sv.summary;
    out += "validation  " + s.verdict + " on " + s.gpu_name + " (compute capability " +
           s.compute_capability + "), " + std::to_string(s.cases_passed) + "/" +
           std::to_string(s.cases) + " cases, worker " + s.worker + ", " + s.finished + ", key " +
           sv.keyid.substr(0, 16) + "\n";
  }
  if (v.validations.empty()) out += "validation  none signed\n";
  for (const auto& n : v.notes) out += "note        " + n + "\n";
  for (const auto& p : v.problems) out += "REFUSED     " + p + "\n";
  if (v.ok) out += "verified    the farm's key signed this wheel's build provenance\n";
  return out;
}

std::string JsonOf(const provenance::WheelVerification& v, const std::string& name,
                   const std::string& sha256) {
  json::array validations;
  for (const auto& sv : v.validations) {
    validations.push_back(json::object{{"verdict", sv.summary.verdict},
                                       {"gpu", sv.summary.gpu_name},
                                       {"compute_capability", sv.summary.compute_capability},
                                       {"cases", sv.summary.cases},
                                       {"cases_passed", sv.summary.cases_passed},
                                       {"worker", sv.summary.worker},
                                       {"keyid", sv.keyid}});
  }
  json::array problems;
  for (const auto& p : v.problems) problems.push_back(json::value(p));
  json::object o{{"ok", v.ok},
                 {"wheel", name},
                 {"sha256", sha256},
                 {"problems", std::move(problems)},
                 {"validations", std::move(validations)}};
  if (v.build) {
    o["build"] = json::object{{"builder_id", v.build->builder_id},
                              {"worker", v.build->worker},
                              {"worker_gpus", v.build->worker_gpus},
                              {"recipe", v.build->recipe},
                              {"project", v.build->project},
                              {"owner", v.build->project_owner},
                              {"source", v.build->source},
                              {"cell", v.build->cell},
                              {"keyid", v.build_keyid}};
  }
  return json::serialize(o) + "\n";
}

}  // namespace

namespace {

// The key set of the farmd farmctl is pointed at (GetProvenanceKeys), and where it came
// from for the report.
Result<std::pair<std::string, std::string>> ConnectedFarmKeys(const FarmConnector& connect) {
  FARM_ASSIGN_OR_RETURN(auto client, connect());
  farm::v1::ProvenanceKeys resp;
  FARM_RETURN_IF_ERROR(client->Call(&FarmStub::GetProvenanceKeys, {}, &resp));
  return std::make_pair(resp.key_set_json(),
                        "the key set of farmd at " + client->address() +
                            ", the farm farmctl is connected to: pin a copy with --keys");
}

// The farm a wheel came from, as far as farmctl can ask it: over HTTP for a URL of its
// index, else the farmd --server names, else none.
struct FarmSource {
  std::string base;  // "https://farm" of "https://farm/files/<sha>/<name>"; "" otherwise
  const FarmConnector* connect = nullptr;
  FetchOptions fetch;
  bool known() const { return !base.empty() || (connect != nullptr && *connect); }
};

// The farm's key set as it stands now.
Result<std::string> CurrentKeys(const FarmSource& farm) {
  if (!farm.base.empty()) return FetchAll(farm.base + kKeysPath, farm.fetch);
  FARM_ASSIGN_OR_RETURN(auto keys, ConnectedFarmKeys(*farm.connect));
  return keys.first;
}

// The owner of `project` in the farm's record; "" when nobody owns it.
Result<std::string> RecordedOwner(const FarmSource& farm, const std::string& project) {
  if (!farm.base.empty()) {
    auto text = FetchAll(farm.base + kProjectsPath + project, farm.fetch);
    if (text.status().code() == StatusCode::kNotFound) return std::string();
    FARM_RETURN_IF_ERROR(text.status());
    boost::system::error_code ec;
    json::value doc = json::parse(*text, ec);
    const json::value* owner =
        !ec && doc.is_object() ? doc.as_object().if_contains("owner") : nullptr;
    if (owner == nullptr || !owner->is_string()) {
      return Status::DataLoss(farm.base + kProjectsPath + project + " is not a project record");
    }
    return std::string(owner->as_string());
  }
  FARM_ASSIGN_OR_RETURN(auto client, (*farm.connect)());
  farm::v1::ListProjectNamesRequest req;
  req.set_name(project);
  farm::v1::ListProjectNamesResponse resp;
  FARM_RETURN_IF_ERROR(client->Call(&FarmStub::ListProjectNames, req, &resp));
  return resp.names().empty() ? std::string() : resp.names(0).owner();
}

// A pinned key set learns the farm's revocations since it was saved; notes say what
// changed, or that the farm could not be asked. True when the farm asked is the pinned
// set's (its record of owners then applies to the wheel).
bool LearnRevocations(const FarmSource& farm, KeySet* keys, std::vector<std::string>* notes) {
  if (!farm.known()) {
    notes->push_back("no farm to ask for revocations since the key set was pinned");
    return false;
  }
  auto text = CurrentKeys(farm);
  auto current = text.ok() ? provenance::ParseKeySet(*text) : Result<KeySet>(text.status());
  auto revoked = current.ok() ? provenance::ApplyRevocations(keys, *current)
                              : Result<std::vector<std::string>>(current.status());
  if (!revoked.ok()) {
    notes->push_back("the farm's revocations could not be read (" + revoked.status().message() +
                     "): only the pinned set's apply");
    return false;
  }
  for (const auto& id : *revoked) {
    notes->push_back("key " + id.substr(0, 16) +
                     " was revoked by the farm after this key set was "
                     "pinned; its signatures are refused");
  }
  return true;
}

// The owner the farm records for the wheel's project, into options; a note when unknown.
void LearnOwner(const FarmSource& farm, const std::string& wheel_name,
                provenance::VerifyOptions* options, std::vector<std::string>* notes) {
  auto parsed = wheel::ParseWheelFilename(wheel_name);
  if (!parsed.ok() || !farm.known()) {
    notes->push_back(
        "the project's owner was not checked against the farm's record (no farm of this key "
        "set to ask)");
    return;
  }
  const std::string project = wheel::NormalizeProjectName(parsed->name);
  auto owner = RecordedOwner(farm, project);
  if (!owner.ok()) {
    notes->push_back("the farm's record of project " + project +
                     " could not be read: " + owner.status().message());
  } else if (owner->empty()) {
    notes->push_back("the farm records no owner of project " + project);
  } else {
    options->recorded_owner = *owner;
  }
}

// The key set verify uses (pinned with --keys, else the index's or the connected farmd's)
// and how the report names where it came from.
Result<std::pair<KeySet, std::string>> LoadKeys(const Flags& flags, const std::string& wheel,
                                                const FarmSource& farm) {
  std::string keys_from = flags.Get("keys", KeysUrlOf(wheel));
  std::string text, note;
  if (keys_from.empty() && farm.known()) {
    FARM_ASSIGN_OR_RETURN(std::tie(text, note), ConnectedFarmKeys(*farm.connect));
    keys_from = "farmd";
  } else if (keys_from.empty()) {
    return Status::InvalidArgument(
        "--keys FILE|URL is needed: the farm's public keys (it serves them at " +
        std::string(kKeysPath) + "; farmctl keys prints them), or name the farm with --server");
  } else {
    FARM_ASSIGN_OR_RETURN(text, FetchAll(keys_from, farm.fetch));
    note = flags.Has("keys") ? keys_from
                             : keys_from + ", the same server as the wheel: pin a copy with --keys";
  }
  auto keys = provenance::ParseKeySet(text);
  if (!keys.ok()) return Status::InvalidArgument(keys_from + ": " + keys.status().message());
  return std::make_pair(std::move(keys).value(), note);
}

Result<std::vector<provenance::Envelope>> LoadProvenance(const std::string& from,
                                                         const FetchOptions& small) {
  auto text = FetchAll(from, small);
  if (text.status().code() == StatusCode::kNotFound) {
    return Status::FailedPrecondition("no provenance at " + from + ": refused");
  }
  FARM_RETURN_IF_ERROR(text.status());
  auto envelopes = ParseProvenance(*text);
  if (!envelopes.ok()) {
    return Status::FailedPrecondition(from + ": " + envelopes.status().message());
  }
  return envelopes;
}

}  // namespace

Status VerifyCommand(const Flags& flags, std::ostream& out, const FarmConnector& connect) {
  if (flags.positionals().size() != 2) {
    return Status::InvalidArgument(
        "usage: farmctl verify WHEEL|URL [--keys FILE|URL] [--provenance FILE|URL] "
        "[--require-validated-arch SM] [--owner PRINCIPAL]");
  }
  const std::string& wheel = flags.positionals()[1];
  FetchOptions small{.ca_file = flags.Get("ca"), .max_bytes = kMaxDocumentBytes};
  std::string keys_url = KeysUrlOf(wheel);
  FarmSource farm{
      .base = keys_url.empty() ? "" : keys_url.substr(0, keys_url.size() - std::strlen(kKeysPath)),
      .connect = &connect,
      .fetch = small};
  FARM_ASSIGN_OR_RETURN(auto loaded, LoadKeys(flags, wheel, farm));
  auto& [keys, keys_note] = loaded;
  std::vector<std::string> notes;
  // A pinned set of another farm than the one farmctl can ask: that farm's record of
  // owners says nothing about this wheel.
  if (flags.Has("keys") && !LearnRevocations(farm, &keys, &notes)) farm = {};
  FARM_ASSIGN_OR_RETURN(auto envelopes,
                        LoadProvenance(flags.Get("provenance", wheel + ".intoto.jsonl"), small));

  Sha256 hasher;
  int64_t size = 0;
  FARM_RETURN_IF_ERROR(Fetch(wheel, {.ca_file = flags.Get("ca"), .max_bytes = kMaxWheelBytes},
                             [&](std::string_view block) {
                               hasher.Update(block);
                               size += static_cast<int64_t>(block.size());
                             }));
  const std::string sha256 = hasher.HexDigest();
  const std::string name = SourceFileName(wheel);
  provenance::VerifyOptions options{.require_validated_arch = flags.Get("require-validated-arch"),
                                    .require_owner = flags.Get("owner"),
                                    .now_ms = RealClock().NowUnixMs()};
  LearnOwner(farm, name, &options, &notes);
  provenance::WheelVerification v =
      provenance::VerifyWheel({name, sha256}, envelopes, keys, options);
  v.notes.insert(v.notes.begin(), notes.begin(), notes.end());
  out << (flags.Get("output") == "json" ? JsonOf(v, name, sha256)
                                        : Text(v, keys, name, sha256, size, wheel, keys_note));
  if (!v.ok) return Status::FailedPrecondition(name + " refused: " + v.problems.front());
  return Status::Ok();
}

Status KeysCommand(const CommandEnv& env, const Flags& flags) {
  const auto& args = flags.positionals();
  std::string sub = args.size() > 1 ? args[1] : "list";
  farm::v1::ProvenanceKeys resp;
  grpc::Status call;
  auto ctx = env.client->Context();
  if (sub == "list") {
    call = env.client->stub()->GetProvenanceKeys(ctx.get(), {}, &resp);
  } else if (sub == "rotate") {
    call = env.client->stub()->RotateProvenanceKey(ctx.get(), {}, &resp);
  } else if (sub == "revoke" && args.size() == 3) {
    farm::v1::RevokeProvenanceKeyRequest req;
    req.set_keyid(args[2]);
    req.set_reason(flags.Get("reason"));
    call = env.client->stub()->RevokeProvenanceKey(ctx.get(), req, &resp);
  } else {
    return Status::InvalidArgument(
        "usage: farmctl keys [list] | rotate | revoke KEYID --reason TEXT");
  }
  FARM_RETURN_IF_ERROR(FromGrpc(call, env.client->address()));
  if (env.json) {
    *env.out << resp.key_set_json();
    return Status::Ok();
  }
  auto keys = provenance::ParseKeySet(resp.key_set_json());
  if (!keys.ok())
    return Status::DataLoss("farmd sent an unreadable key set: " + keys.status().message());
  if (sub == "rotate") *env.out << "new signing key " << resp.changed_keyid() << "\n";
  if (sub == "revoke") *env.out << "revoked key " << resp.changed_keyid() << "\n";
  *env.out << "farm " << keys->farm_id << " (builder " << provenance::BuilderId(keys->farm_id)
           << ")\n";
  for (const auto& k : keys->keys) {
    *env.out << k.keyid << "  " << provenance::KeyStateName(k.state) << "  created " << k.created;
    if (!k.retired.empty()) *env.out << ", retired " << k.retired;
    if (!k.revoked.empty()) *env.out << ", revoked " << k.revoked << " (" << k.reason << ")";
    *env.out << "\n";
  }
  return Status::Ok();
}

}  // namespace farm::cli
