#include "daemon/notify/webhooks.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>

#include "common/log.h"
#include "common/utf8.h"

namespace farm::notify {

namespace json = boost::json;

namespace {

bool GoodName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

// A receiver's answer that a retry cannot change: a client error other than a timeout or
// a rate limit.
bool Permanent(int status) {
  return status >= 400 && status < 500 && status != 408 && status != 429;
}

}  // namespace

std::string WebhookSecretKey(const std::string& name) {
  std::string key = "WEBHOOK_URL_";
  for (char c : name)
    key += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return key;
}

Result<WebhookTarget> ParseWebhookTarget(const std::string& flag, const auth::Secrets& secrets) {
  size_t colon = flag.find(':');
  WebhookTarget target{.name = flag.substr(0, colon)};
  if (!GoodName(target.name)) {
    return Status::InvalidArgument(
        "--webhook wants NAME[:KINDS] with a NAME of a-z, 0-9, '-', "
        "'_' (got \"" +
        target.name + "\")");
  }
  std::string kinds = colon == std::string::npos ? "" : flag.substr(colon + 1);
  while (!kinds.empty()) {
    size_t comma = kinds.find(',');
    std::string kind = kinds.substr(0, comma);
    kinds = comma == std::string::npos ? "" : kinds.substr(comma + 1);
    auto parsed = coverage::ParseEventKind(kind);
    if (!parsed) {
      return Status::InvalidArgument("--webhook " + target.name + ": unknown event \"" + kind +
                                     "\" (wheel_validated, wheel_built, build_failed, "
                                     "publication_refused, torch_proof)");
    }
    target.events.insert(*parsed);
  }
  if (target.events.empty()) {
    target.events = {coverage::EventKind::kWheelValidated, coverage::EventKind::kWheelBuilt,
                     coverage::EventKind::kBuildFailed,    coverage::EventKind::kPublicationRefused,
                     coverage::EventKind::kTorchProof,     coverage::EventKind::kRequestBuilt};
  }
  std::string key = WebhookSecretKey(target.name);
  auto it = secrets.find(key);
  if (it == secrets.end() || it->second.empty()) {
    return Status::FailedPrecondition("--webhook " + target.name + ": the secrets file (or $FARM_" +
                                      key + ") has no " + key);
  }
  if (!it->second.starts_with("https://") && !it->second.starts_with("http://")) {
    return Status::FailedPrecondition("--webhook " + target.name + ": " + key +
                                      " is not an http(s) URL");
  }
  target.url = it->second;
  return target;
}

std::string EscapeSlackText(std::string_view text) { return EscapeMarkup(text, /*quotes=*/false); }

std::string WebhookPayload(const coverage::Event& e, const std::string& public_url) {
  std::string base = public_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::string page = e.job_id > 0 ? "/#/job/" + std::to_string(e.job_id)
                                  : "/#/build/" + std::to_string(e.build_id);
  std::string text = coverage::EventTitle(e);
  if (!e.cause.empty()) text += ": " + e.cause.substr(0, 500);
  text = EscapeSlackText(text);
  if (!base.empty()) text += " <" + EscapeSlackText(base + page) + ">";
  json::object o{{"text", text},
                 {"event", coverage::EventKindName(e.kind)},
                 {"id", e.id},
                 {"package", e.package},
                 {"version", e.version},
                 {"build_id", e.build_id},
                 {"job_id", e.job_id},
                 {"wheel", e.wheel},
                 {"sha256", e.sha256},
                 {"cell", e.cell},
                 {"cause", e.cause},
                 {"schedule_id", e.schedule_id},
                 {"release_candidate", e.release_candidate},
                 {"time", FormatRfc3339(e.time_ms)},
                 {"url", base + page}};
  return json::serialize(o);
}

Notifier::Notifier(NotifierDeps deps, std::vector<WebhookTarget> targets, NotifierOptions options)
    : deps_(deps), targets_(std::move(targets)), options_(std::move(options)) {
  // Whatever read the URLs registered them already when they came from the secrets file;
  // a target made another way must not leak through a transport error either.
  for (const WebhookTarget& t : targets_) log::RegisterSecret(t.url);
}

Notifier::~Notifier() { Stop(); }

Status Notifier::Scan() {
  int64_t generation = deps_.store->Generation();
  if (generation == scanned_generation_) return Status::Ok();
  FARM_ASSIGN_OR_RETURN(auto builds,
                        coverage::ReadRecentBuilds(*deps_.store, "", options_.scan_builds));
  std::vector<store::RequestRow> requests;
  if (store::RequestStore* asked = store::AsRequestStore(deps_.store); asked != nullptr) {
    FARM_ASSIGN_OR_RETURN(requests, asked->ListRequests(0, 0, options_.scan_builds));
  }
  std::vector<coverage::Event> events = coverage::EventsWithRequests(builds, requests, SIZE_MAX);
  std::vector<store::WebhookDeliveryRow> rows;
  for (size_t t = 0; t < targets_.size(); ++t) {
    for (const coverage::Event& e : events) {
      if (!targets_[t].events.count(e.kind) || e.time_ms < since_ms_[t]) continue;
      if (queued_.count(targets_[t].name + "\n" + e.id)) continue;
      rows.push_back({.target = targets_[t].name,
                      .event_id = e.id,
                      .kind = std::string(coverage::EventKindName(e.kind)),
                      .payload = WebhookPayload(e, options_.public_url)});
    }
  }
  FARM_ASSIGN_OR_RETURN(int added,
                        deps_.outbox->EnqueueWebhookDeliveries(rows, deps_.clock->NowUnixMs()));
  if (added > 0) log::Info("webhooks: queued " + std::to_string(added) + " deliveries");
  for (const store::WebhookDeliveryRow& r : rows) queued_.insert(r.target + "\n" + r.event_id);
  scanned_generation_ = generation;
  return Status::Ok();
}

Status Notifier::Send(store::WebhookDeliveryRow row, const WebhookTarget& target) {
  row.state = "sending";
  row.attempts += 1;
  FARM_RETURN_IF_ERROR(deps_.outbox->UpdateWebhookDelivery(row, deps_.clock->NowUnixMs()));
  httpc::HttpRequest req{.method = "POST", .url = target.url, .body = row.payload};
  req.headers.Set("Content-Type", "application/json");
  req.headers.Set("Idempotency-Key", row.event_id);
  req.headers.Set("X-Farm-Event", row.kind);
  req.timeout_ms = options_.timeout_ms;
  req.connect_timeout_ms = std::min<int64_t>(options_.timeout_ms, 15'000);
  auto resp = deps_.http->Send(req);
  int64_t now = deps_.clock->NowUnixMs();
  std::string error;
  bool permanent = false;
  if (!resp.ok()) {
    error = log::Redact(resp.status().message());
  } else if (resp->status >= 200 && resp->status < 300) {
    row.state = "delivered";
    row.error.clear();
    log::Info("webhooks: delivered " + row.event_id + " to " + target.name);
    return deps_.outbox->UpdateWebhookDelivery(row, now);
  } else {
    permanent = Permanent(resp->status);
    error = "the receiver answered HTTP " + std::to_string(resp->status);
  }
  row.error = error;
  if (permanent || row.attempts >= options_.max_attempts) {
    row.state = "failed";
  } else {
    row.state = "pending";
    int64_t wait = options_.backoff_base_ms;
    for (int i = 1; i < row.attempts && wait < options_.backoff_max_ms; ++i) wait *= 2;
    row.not_before_ms = now + std::min(options_.backoff_max_ms, wait);
  }
  log::Warn("webhooks: " + row.event_id + " to " + target.name + ", attempt " +
            std::to_string(row.attempts) + ": " + error + " (" + row.state + ")");
  return deps_.outbox->UpdateWebhookDelivery(row, now);
}

Result<int> Notifier::RunOnce() {
  if (since_ms_.size() != targets_.size()) {
    since_ms_.clear();
    for (const WebhookTarget& t : targets_) {
      FARM_ASSIGN_OR_RETURN(int64_t since,
                            deps_.outbox->RegisterWebhookTarget(t.name, deps_.clock->NowUnixMs()));
      since_ms_.push_back(since);
    }
  }
  FARM_RETURN_IF_ERROR(Scan());
  FARM_ASSIGN_OR_RETURN(auto due,
                        deps_.outbox->ListDueWebhookDeliveries(deps_.clock->NowUnixMs(), 100));
  int sent = 0;
  for (store::WebhookDeliveryRow& row : due) {
    {
      std::lock_guard lock(mu_);
      if (stopped_) break;
    }
    auto target = std::find_if(targets_.begin(), targets_.end(),
                               [&](const WebhookTarget& t) { return t.name == row.target; });
    if (target == targets_.end()) continue;  // a target no longer configured: kept as it is
    FARM_RETURN_IF_ERROR(Send(std::move(row), *target));
    ++sent;
  }
  return sent;
}

void Notifier::Start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopped_) {
      lock.unlock();
      auto r = RunOnce();
      if (!r.ok()) log::Warn("webhooks: " + log::Redact(r.status().ToString()));
      lock.lock();
      cv_.wait_for(lock, std::chrono::milliseconds(options_.interval_ms),
                   [this] { return stopped_; });
    }
  });
}

void Notifier::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace farm::notify
