// ListRecipeNames, TransferRecipeName, ListProjectNames, TransferProjectName and ListAudit:
// who owns which recipe and project name, giving a name to another principal (admin), and the audit
// log of every mutation (admin). No message carries a token: principals are token names and audit
// texts were redacted when written.
#include <algorithm>

#include "common/clock.h"
#include "common/log.h"
#include "common/recipe/recipe.h"
#include "common/wheel/wheel_name.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/model/convert.h"

namespace farm::api {
namespace {

constexpr int kDefaultAuditRecords = 50;
constexpr int kMaxAuditRecords = 10000;

// A principal is a token's name: anything a token may be named, but not empty, not
// over 200 bytes and without control characters (it is shown in listings and logs).
Status CheckPrincipalName(const std::string& name) {
  bool printable = std::none_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  if (name.empty() || name.size() > 200 || !printable) {
    return Status::InvalidArgument(
        "the new owner must be a token's name (1 to 200 printable bytes), got \"" +
        log::Redact(name.substr(0, 200)) + "\"");
  }
  return Status::Ok();
}

}  // namespace

grpc::Status ClientService::ListRecipeNames(grpc::ServerContext* call,
                                            const farm::v1::ListRecipeNamesRequest*,
                                            farm::v1::ListRecipeNamesResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListRecipeNames());
    for (const auto& row : rows) *resp->add_names() = model::NameToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::TransferRecipeName(grpc::ServerContext* call,
                                               const farm::v1::TransferRecipeNameRequest* req,
                                               farm::v1::RecipeName* resp) {
  audit::Entry entry{audit::Action::kNameTransfer, "recipe " + req->name()};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    if (!recipe::IsRecipeName(req->name())) {
      return Status::InvalidArgument("\"" + req->name() + "\" is not a recipe name");
    }
    FARM_RETURN_IF_ERROR(CheckPrincipalName(req->to()));
    FARM_ASSIGN_OR_RETURN(auto before, ctx_->store->GetRecipeName(req->name()));
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->store->TransferRecipeName(req->name(), req->to(),
                                                                    ctx_->clock->NowUnixMs()));
    std::string from = before ? before->owner : "nobody";
    entry.done = "from " + from + " to " + row.owner;
    log::Info("recipe name " + row.name + " transferred from " + from + " to " + row.owner +
              " by " + who.name);
    *resp = model::NameToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::ListProjectNames(grpc::ServerContext* call,
                                             const farm::v1::ListProjectNamesRequest* req,
                                             farm::v1::ListProjectNamesResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    std::vector<store::ProjectNameRow> rows;
    if (req->name().empty()) {
      FARM_ASSIGN_OR_RETURN(rows, ctx_->store->ListProjectNames());
    } else {
      FARM_ASSIGN_OR_RETURN(auto row,
                            ctx_->store->GetProjectName(wheel::NormalizeProjectName(req->name())));
      if (row) rows.push_back(*row);
    }
    for (const auto& row : rows) *resp->add_names() = model::NameToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::TransferProjectName(grpc::ServerContext* call,
                                                const farm::v1::TransferRecipeNameRequest* req,
                                                farm::v1::RecipeName* resp) {
  const std::string name = wheel::NormalizeProjectName(req->name());
  audit::Entry entry{audit::Action::kNameTransfer, "project " + name};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    if (!recipe::IsRecipeName(name)) {  // the same characters, once normalised
      return Status::InvalidArgument("\"" + req->name() + "\" is not a project name");
    }
    FARM_RETURN_IF_ERROR(CheckPrincipalName(req->to()));
    FARM_ASSIGN_OR_RETURN(auto before, ctx_->store->GetProjectName(name));
    FARM_ASSIGN_OR_RETURN(
        auto row, ctx_->store->TransferProjectName(name, req->to(), ctx_->clock->NowUnixMs()));
    std::string from = before ? before->owner : "nobody";
    entry.done = "from " + from + " to " + row.owner;
    log::Info("project " + row.name + " transferred from " + from + " to " + row.owner + " by " +
              who.name);
    *resp = model::NameToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::ListAudit(grpc::ServerContext* call,
                                      const farm::v1::ListAuditRequest* req,
                                      farm::v1::ListAuditResponse* resp) {
  return Handle(ctx_, call, Need::kAdmin, [&](const Principal&) -> Status {
    if (ctx_->audit != nullptr) ctx_->audit->Flush();  // the records of calls that answered
    int limit = req->limit() <= 0 ? kDefaultAuditRecords : std::min(req->limit(), kMaxAuditRecords);
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListAudit({.principal = req->principal(),
                                                             .before_id = req->before_id(),
                                                             .limit = limit}));
    for (const auto& row : rows) *resp->add_records() = model::AuditToProto(row);
    if (static_cast<int>(rows.size()) == limit) resp->set_next_before_id(rows.back().id);
    return Status::Ok();
  });
}

}  // namespace farm::api
