#include "daemon/auth/token_authority.h"

#include "common/clock.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/sha256.h"

namespace farm::auth {
namespace {

int ClientRank(const std::string& role) {
  if (role == "viewer") return 1;
  if (role == "submitter") return 2;
  if (role == "admin") return 3;
  return 0;
}

bool Satisfies(const std::string& role, Need need) {
  switch (need) {
    case Need::kViewer:
      return ClientRank(role) >= 1;
    case Need::kSubmitter:
      return ClientRank(role) >= 2;
    case Need::kAdmin:
      return ClientRank(role) >= 3;
    case Need::kEnroll:
      return role == "enroll" || role == "worker" || role == "admin";
    case Need::kWorker:
      return role == "worker";
  }
  return false;
}

const char* NeedName(Need need) {
  switch (need) {
    case Need::kViewer:
      return "viewer";
    case Need::kSubmitter:
      return "submitter";
    case Need::kAdmin:
      return "admin";
    case Need::kEnroll:
      return "enroll";
    case Need::kWorker:
      return "worker";
  }
  return "?";
}

}  // namespace

Result<std::string> TokenAuthority::Create(const std::string& role, const std::string& name,
                                           const std::string& worker_id, int64_t ttl_ms) {
  if (ttl_ms < 0) return Status::InvalidArgument("a token's lifetime must not be negative");
  if (ClientRank(role) == 0 && role != "enroll" && role != "worker") {
    return Status::InvalidArgument("unknown role \"" + role +
                                   "\" (expected viewer, submitter, admin or enroll)");
  }
  std::string token = "farm_" + role.substr(0, 3) + "_" + RandomHex(24);
  const int64_t now = clock_->NowUnixMs();
  store::TokenRow row{Sha256Hex(token), name, role, worker_id, now, ttl_ms > 0 ? now + ttl_ms : 0};
  FARM_RETURN_IF_ERROR(store_->InsertToken(row));
  log::RegisterSecret(token);
  return token;
}

Result<Principal> TokenAuthority::Authorize(const std::string& value, Need need) {
  FARM_ASSIGN_OR_RETURN(Principal who, Identify(value));
  FARM_RETURN_IF_ERROR(CheckRole(who, need));
  return who;
}

Status TokenAuthority::CheckRole(const Principal& who, Need need) {
  if (Satisfies(who.role, need)) return Status::Ok();
  return Status::PermissionDenied("role " + who.role + " may not do this (needs " + NeedName(need) +
                                  ")");
}

Result<Principal> TokenAuthority::PrincipalNamed(const std::string& name) {
  FARM_ASSIGN_OR_RETURN(auto tokens, store_->ListTokens());
  const int64_t now = clock_->NowUnixMs();
  std::string best;
  for (const auto& t : tokens) {
    bool live = t.revoked_ms == 0 && (t.expires_ms == 0 || now < t.expires_ms);
    if (t.name == name && live && ClientRank(t.role) > ClientRank(best)) best = t.role;
  }
  if (best.empty()) {
    return Status::Unauthenticated("\"" + name + "\" has no valid client token any more");
  }
  return Principal{name, best, ""};
}

Result<Principal> TokenAuthority::Identify(const std::string& value) {
  if (value.empty()) return Status::Unauthenticated("missing bearer token");
  static const std::string kPrefix = "Bearer ";
  if (value.rfind(kPrefix, 0) != 0) return Status::Unauthenticated("malformed authorization");
  std::string hash = Sha256Hex(value.substr(kPrefix.size()));
  Result<store::TokenRow> row = Status::NotFound("");
  {
    std::lock_guard lock(mu_);
    auto it = known_.find(hash);
    if (it != known_.end()) row = it->second;
  }
  if (!row.ok()) {
    row = store_->FindToken(hash);
    if (row.ok()) {
      std::lock_guard lock(mu_);
      if (known_.size() >= kMaxRemembered) known_.clear();
      known_[hash] = *row;
    }
  }
  if (!row.ok()) {
    if (row.status().code() == StatusCode::kNotFound) {
      return Status::Unauthenticated("unknown token");
    }
    return row.status();
  }
  if (row->revoked_ms > 0) {
    return Status::Unauthenticated("token \"" + row->name + "\" was revoked at " +
                                   FormatRfc3339(row->revoked_ms));
  }
  if (row->expires_ms > 0 && clock_->NowUnixMs() >= row->expires_ms) {
    return Status::Unauthenticated("token \"" + row->name + "\" expired at " +
                                   FormatRfc3339(row->expires_ms));
  }
  return Principal{row->name, row->role, row->worker_id};
}

Result<store::TokenRow> TokenAuthority::Revoke(const std::string& hash_prefix, int64_t now_ms) {
  auto row = store_->RevokeToken(hash_prefix, now_ms);
  std::lock_guard lock(mu_);
  known_.clear();
  return row;
}

Status TokenAuthority::BootstrapTokens(const std::string& dir) {
  FARM_ASSIGN_OR_RETURN(int64_t count, store_->CountTokens());
  if (count > 0) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(std::string admin, Create("admin", "bootstrap-admin"));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/admin.token", admin + "\n", 0600));
  FARM_ASSIGN_OR_RETURN(std::string enroll, Create("enroll", "bootstrap-enroll"));
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(dir + "/enroll.token", enroll + "\n", 0600));
  log::Info("first start: wrote " + dir + "/admin.token and " + dir + "/enroll.token (mode 0600)");
  return Status::Ok();
}

}  // namespace farm::auth
