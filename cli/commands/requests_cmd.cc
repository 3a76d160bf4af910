// farmctl request and farmctl requests (docs/requests.md): ask the farm for the wheel of
// one cell, and list the requests, approving or refusing them (admin).
#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"

namespace farm::cli {
namespace {

constexpr char kRequestUsage[] =
    "usage: farmctl request PACKAGE --python V --compute-capability CC --platform TAG "
    "[--torch V --cuda V] [--package-version V]";
constexpr char kRequestsUsage[] =
    "usage: farmctl requests [list] [--state S] | approve ID | refuse ID --reason TEXT";

std::string DashIfEmpty(const std::string& s) { return s.empty() ? "-" : s; }

std::string DescribeRequest(const farm::v1::WheelRequest& r) {
  std::string out = "request " + std::to_string(r.id()) + " is " + r.state();
  if (r.build_id() > 0) {
    out += " (build " + std::to_string(r.build_id()) + ", job " + std::to_string(r.job_id()) + ")";
  }
  if (!r.wheel().empty()) out += ": " + r.wheel();
  if (!r.reason().empty()) out += ": " + r.reason();
  return out + "\n";
}

Result<int64_t> RequestId(const Flags& flags) {
  if (flags.positionals().size() < 3) return Status::InvalidArgument(kRequestsUsage);
  const std::string& text = flags.positionals()[2];
  int64_t id = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || id > 1'000'000'000'000)
      return Status::InvalidArgument(kRequestsUsage);
    id = id * 10 + (c - '0');
  }
  if (id == 0) return Status::InvalidArgument(kRequestsUsage);
  return id;
}

Status DecideRequest(const CommandEnv& env, const Flags& flags, bool approve) {
  farm::v1::DecideWheelRequestRequest req;
  FARM_ASSIGN_OR_RETURN(int64_t id, RequestId(flags));
  req.set_id(id);
  req.set_approve(approve);
  req.set_reason(flags.Get("reason"));
  if (!approve && req.reason().empty()) return Status::InvalidArgument(kRequestsUsage);
  farm::v1::WheelRequest resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::DecideWheelRequest, req, &resp));
  *env.out << (env.json ? ToJson(resp) + "\n" : DescribeRequest(resp));
  return Status::Ok();
}

Status ListRequests(const CommandEnv& env, const Flags& flags) {
  farm::v1::ListWheelRequestsRequest req;
  req.set_state(flags.Get("state"));
  farm::v1::ListWheelRequestsResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::ListWheelRequests, req, &resp));
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
    return Status::Ok();
  }
  if (resp.requests().empty()) {
    *env.out << "no requests\n";
    return Status::Ok();
  }
  std::vector<std::vector<std::string>> rows = {{"ID", "PACKAGE", "VERSION", "PYTHON", "TORCH",
                                                 "CUDA", "CC", "PLATFORM", "STATE", "FILINGS",
                                                 "BUILD", "WHEEL"}};
  for (const auto& r : resp.requests()) {
    const auto& s = r.spec();
    rows.push_back({std::to_string(r.id()), s.package(), DashIfEmpty(s.version()), s.python(),
                    DashIfEmpty(s.torch()), DashIfEmpty(s.cuda()), s.compute_capability(),
                    s.platform(),
                    r.state() + (r.anonymous() && r.state() == "requested" ? " (approval)" : ""),
                    std::to_string(r.filings()),
                    r.build_id() > 0 ? std::to_string(r.build_id()) : "-", DashIfEmpty(r.wheel())});
  }
  *env.out << AlignColumns(rows);
  for (const auto& r : resp.requests()) {
    if (!r.reason().empty()) *env.out << "request " << r.id() << ": " << r.reason() << "\n";
  }
  return Status::Ok();
}

}  // namespace

Status RequestCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() != 2) return Status::InvalidArgument(kRequestUsage);
  farm::v1::WheelRequestSpec req;
  req.set_package(flags.positionals()[1]);
  req.set_version(flags.Get("package-version"));
  req.set_python(flags.Get("python"));
  req.set_torch(flags.Get("torch"));
  req.set_cuda(flags.Get("cuda"));
  req.set_compute_capability(flags.Get("compute-capability"));
  req.set_platform(flags.Get("platform"));
  farm::v1::FileWheelRequestResponse resp;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::FileWheelRequest, req, &resp));
  if (env.json) {
    *env.out << ToJson(resp) << "\n";
  } else {
    *env.out << (resp.merged() ? "merged with an identical request: " : "filed: ")
             << DescribeRequest(resp.request());
  }
  const std::string& state = resp.request().state();
  return state == "refused" || state == "failed"
             ? Status::FailedPrecondition("the farm cannot build it: " + resp.request().reason())
             : Status::Ok();
}

Status RequestsCommand(const CommandEnv& env, const Flags& flags) {
  const auto& p = flags.positionals();
  const std::string sub = p.size() > 1 ? p[1] : "list";
  if (sub == "list") return ListRequests(env, flags);
  if (sub == "approve") return DecideRequest(env, flags, true);
  if (sub == "refuse") return DecideRequest(env, flags, false);
  return Status::InvalidArgument(kRequestsUsage);
}

}  // namespace farm::cli
