// Webhooks: farmd POSTs each coverage event (coverage/events.h: a wheel validated, a build
// failed) to the targets that asked for its kind, as Slack-compatible JSON ({"text": ...}
// plus the event's fields). docs/coverage.md, "Webhooks".
//
// Delivery is an outbox (store/webhook_store.h), as the publisher's (publish/outbox.h):
// each pass derives the events again from the newest builds and inserts a row per target
// and event unless one exists (the event id is stable, so this is idempotent and nothing
// that happened while farmd was down is lost), then sends the due rows. A row is marked
// "sending" (attempts + 1) before its POST and "delivered" after a 2xx, so a farmd killed in
// between sends it again after a restart, with the same Idempotency-Key header; a receiver
// that answered an error is retried with doubling backoff until max_attempts.
//
// Secrets: a target's URL is a secret (it carries the receiver's token): it comes from the
// secrets file (WEBHOOK_URL_<NAME>), is registered with the log redactor, and no row, log
// line or error holds it.
//
// Thread-safety: RunOnce() must not run concurrently with itself; Start() runs it on one
// thread until Stop().
#ifndef FARM_DAEMON_NOTIFY_WEBHOOKS_H_
#define FARM_DAEMON_NOTIFY_WEBHOOKS_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/httpc/http_client.h"
#include "common/status.h"
#include "daemon/auth/secrets_file.h"
#include "daemon/coverage/events.h"
#include "daemon/store/store.h"
#include "daemon/store/webhook_store.h"

namespace farm::notify {

struct WebhookTarget {
  std::string name;
  std::string url;  // secret
  std::set<coverage::EventKind> events;
};

// The secrets key of target `name`: "WEBHOOK_URL_" and the name upper-cased, '-' as '_'.
std::string WebhookSecretKey(const std::string& name);

// Parses a --webhook value, "NAME" or "NAME:KIND[,KIND]" (kinds wheel_validated,
// build_failed; none: both), taking the URL from `secrets`. InvalidArgument for a bad
// name or kind, FailedPrecondition when the secrets lack the URL or it is not http(s).
// Errors never hold the URL.
Result<WebhookTarget> ParseWebhookTarget(const std::string& flag, const auth::Secrets& secrets);

// `text` with Slack's control characters escaped as Slack documents ("Formatting text
// for app surfaces": & as &amp;, < as &lt;, > as &gt;), so that a recipe's name, a
// version or a failure's cause written by a build cannot mention <!channel> or <!here>,
// ping a user (<@U...>) or show a link whose text hides its target (<http://x|y>).
std::string EscapeSlackText(std::string_view text);

// The JSON body of `event`: {"text": one line for people, "event": kind, "id": event id,
// "package", "version", "build_id", "job_id", "wheel", "sha256", "cell", "cause",
// "schedule_id", "time", "url"}. `public_url` ("" for none) makes "url" absolute. In
// "text" everything the event carries is escaped (EscapeSlackText) and the only markup is
// the farm's own link to the build or job; the other fields are the raw values.
std::string WebhookPayload(const coverage::Event& event, const std::string& public_url);

struct NotifierOptions {
  int64_t interval_ms = 1000;      // between passes
  int max_attempts = 10;           // sends before a row is failed
  int64_t backoff_base_ms = 2000;  // doubling per attempt
  int64_t backoff_max_ms = 600'000;
  int64_t timeout_ms = 10'000;  // one POST
  int scan_builds = 200;        // the newest builds each scan reads
  std::string public_url;
};

struct NotifierDeps {
  store::Store* store = nullptr;
  store::WebhookStore* outbox = nullptr;
  const Clock* clock = nullptr;
  httpc::HttpClient* http = nullptr;
};

class Notifier {
 public:
  Notifier(NotifierDeps deps, std::vector<WebhookTarget> targets, NotifierOptions options);
  ~Notifier();

  // One pass: registers the targets (once), queues new events, sends every due row once.
  // Returns how many rows it sent; errors are the store's.
  Result<int> RunOnce();

  void Start();
  void Stop();  // idempotent

 private:
  Status Scan();
  Status Send(store::WebhookDeliveryRow row, const WebhookTarget& target);

  NotifierDeps deps_;
  std::vector<WebhookTarget> targets_;
  std::vector<int64_t> since_ms_;  // per target: when it was first registered
  // "<target>\n<event id>" of the rows known to be stored, so a pass writes only new ones.
  std::set<std::string> queued_;
  NotifierOptions options_;
  int64_t scanned_generation_ = -1;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

}  // namespace farm::notify

#endif  // FARM_DAEMON_NOTIFY_WEBHOOKS_H_
