#include "worker/agent/state.h"

#include <boost/json.hpp>

#include "common/fs.h"

namespace farm::agent {
namespace {

std::string IdentityPath(const std::string& state_dir) { return state_dir + "/worker.json"; }

}  // namespace

Result<WorkerIdentity> LoadIdentity(const std::string& state_dir) {
  auto content = fs::ReadFile(IdentityPath(state_dir));
  if (!content.ok()) {
    if (content.status().code() == StatusCode::kNotFound) return WorkerIdentity{};
    return content.status();
  }
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(*content, ec);
  if (ec || !v.is_object()) {
    return Status::DataLoss(IdentityPath(state_dir) + " is not a JSON object");
  }
  WorkerIdentity id;
  const auto& o = v.as_object();
  if (auto* p = o.if_contains("worker_id"); p && p->is_string())
    id.worker_id = p->as_string().c_str();
  if (auto* p = o.if_contains("worker_token"); p && p->is_string()) {
    id.worker_token = p->as_string().c_str();
  }
  return id;
}

Status SaveIdentity(const std::string& state_dir, const WorkerIdentity& identity) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(state_dir, 0711));
  boost::json::object o;
  o["worker_id"] = identity.worker_id;
  o["worker_token"] = identity.worker_token;
  return fs::WriteFileAtomic(IdentityPath(state_dir), boost::json::serialize(o) + "\n", 0600);
}

}  // namespace farm::agent
