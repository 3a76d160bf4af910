// AddHost, ProvisionHost and ListHosts: the hosts farmd provisions with the playbooks
// (daemon/hosts). Recording and provisioning need an admin: a run executes
// ansible-playbook on farmd's machine. Listing joins each host with the worker that
// registered under its name. No message carries a token; logs are redacted when stored.
#include "common/log.h"
#include "daemon/api/client/client_service.h"
#include "daemon/api/handler.h"
#include "daemon/hosts/host_manager.h"
#include "daemon/model/convert.h"

namespace farm::api {
namespace {

// The worker registered under the host's name; the most recently heard from wins.
void AttachWorker(const std::vector<store::WorkerRow>& workers, farm::v1::Host* host) {
  const store::WorkerRow* best = nullptr;
  for (const auto& w : workers) {
    if (w.name != host->name()) continue;
    if (best == nullptr || w.last_heartbeat_ms > best->last_heartbeat_ms) best = &w;
  }
  if (best == nullptr) return;
  host->set_worker_id(best->id);
  host->set_worker_state(std::string(store::WorkerStateName(best->state)));
}

Status NeedHosts(const ServiceContext& ctx) {
  if (ctx.hosts == nullptr) return Status::Unimplemented("this farmd does not manage hosts");
  return Status::Ok();
}

}  // namespace

grpc::Status ClientService::AddHost(grpc::ServerContext* call, const farm::v1::AddHostRequest* req,
                                    farm::v1::Host* resp) {
  audit::Entry entry{audit::Action::kHostAdd, "host " + req->name()};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedHosts(*ctx_));
    std::map<std::string, std::string> vars(req->vars().begin(), req->vars().end());
    FARM_ASSIGN_OR_RETURN(
        auto row, ctx_->hosts->Add(req->name(), req->address(), req->kind(), vars, req->replace()));
    log::Info("host " + row.name + " (" + row.kind + ", " + row.address + ") recorded by " +
              who.name);
    *resp = model::HostToProto(row);
    return Status::Ok();
  });
}

grpc::Status ClientService::ProvisionHost(grpc::ServerContext* call,
                                          const farm::v1::ProvisionHostRequest* req,
                                          farm::v1::Host* resp) {
  audit::Entry entry{audit::Action::kHostProvision, "host " + req->name()};
  return HandleMutation(ctx_, call, Need::kAdmin, &entry, [&](const Principal& who) -> Status {
    FARM_RETURN_IF_ERROR(NeedHosts(*ctx_));
    log::Info("provisioning of host " + req->name() + " started by " + who.name);
    FARM_ASSIGN_OR_RETURN(auto row, ctx_->hosts->Provision(req->name(), req->wait()));
    *resp = model::HostToProto(row);
    FARM_ASSIGN_OR_RETURN(auto workers, ctx_->store->ListWorkers());
    AttachWorker(workers, resp);
    return Status::Ok();
  });
}

grpc::Status ClientService::ListHosts(grpc::ServerContext* call,
                                      const farm::v1::ListHostsRequest* req,
                                      farm::v1::ListHostsResponse* resp) {
  return Handle(ctx_, call, Need::kViewer, [&](const Principal&) -> Status {
    FARM_ASSIGN_OR_RETURN(auto rows, ctx_->store->ListHosts());
    FARM_ASSIGN_OR_RETURN(auto workers, ctx_->store->ListWorkers());
    bool found = req->name().empty();
    for (const auto& row : rows) {
      if (!req->name().empty() && row.name != req->name()) continue;
      found = true;
      farm::v1::Host* h = resp->add_hosts();
      *h = model::HostToProto(row);
      AttachWorker(workers, h);
      if (req->include_log()) {
        FARM_ASSIGN_OR_RETURN(std::string text, ctx_->store->GetHostLog(row.name));
        h->set_log(log::Redact(text));
      }
    }
    if (!found) return Status::NotFound("no host " + req->name());
    return Status::Ok();
  });
}

}  // namespace farm::api
