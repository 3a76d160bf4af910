// Fakes of the provisioner's seams for unit tests: a upstream::Fetcher serving scripted URLs (and
// counting every request per URL), and a ProcessRunner that answers commands with a
// scripted handler instead of starting processes.
#ifndef FARM_TESTS_SUPPORT_FAKE_UPSTREAM_H_
#define FARM_TESTS_SUPPORT_FAKE_UPSTREAM_H_

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/upstream/fetcher.h"

namespace farm::testing {

struct FakeResource {
  std::string body;
  std::string content_type = "application/octet-stream";
  Status failure;  // returned instead of the body when not OK
};

class FakeFetcher final : public upstream::Fetcher {
 public:
  void Serve(const std::string& url, std::string body, std::string content_type = "") {
    std::lock_guard<std::mutex> lock(mu_);
    resources_[url] = {
        std::move(body), content_type.empty() ? "application/octet-stream" : content_type, {}};
  }
  void Fail(const std::string& url, Status failure) {
    std::lock_guard<std::mutex> lock(mu_);
    resources_[url].failure = std::move(failure);
  }
  int Count(const std::string& url) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(url);
    return it == counts_.end() ? 0 : it->second;
  }
  int Total() const {
    std::lock_guard<std::mutex> lock(mu_);
    int n = 0;
    for (const auto& [url, count] : counts_) n += count;
    return n;
  }
  // Requests of `url` wait, counted by Waiting, until Release (an upstream that stalls).
  void Hold(const std::string& url) {
    std::lock_guard<std::mutex> lock(mu_);
    held_.insert(url);
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_.clear();
    }
    released_.notify_all();
  }
  int Waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }
  // Delivered in blocks of this size (many blocks exercise the streaming paths).
  size_t block_size = 7;

  Result<upstream::FetchedPage> GetPage(const std::string& url, const std::string& accept,
                                        int64_t max_bytes) override {
    FakeResource r;
    FARM_RETURN_IF_ERROR(Lookup(url, &r));
    if (static_cast<int64_t>(r.body.size()) > max_bytes) return Status::ResourceExhausted("big");
    return upstream::FetchedPage{url, r.content_type, r.body, EtagOf(r.body)};
  }
  // As an index with ETags answers: 304 (counted by NotModified) while the page is the same.
  Result<upstream::FetchedPage> GetPageIfChanged(const std::string& url, const std::string& accept,
                                                 int64_t max_bytes,
                                                 const std::string& etag) override {
    FARM_ASSIGN_OR_RETURN(upstream::FetchedPage page, GetPage(url, accept, max_bytes));
    if (!etag.empty() && etag == page.etag) {
      std::lock_guard<std::mutex> lock(mu_);
      not_modified_[url] += 1;
      page.body.clear();
      page.not_modified = true;
    }
    return page;
  }
  int NotModified(const std::string& url) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = not_modified_.find(url);
    return it == not_modified_.end() ? 0 : it->second;
  }
  static std::string EtagOf(const std::string& body) {
    return "\"" + std::to_string(std::hash<std::string>{}(body)) + "\"";
  }
  Status Download(const std::string& url, const upstream::DownloadSink& sink) override {
    FakeResource r;
    FARM_RETURN_IF_ERROR(Lookup(url, &r));
    for (size_t at = 0; at < r.body.size(); at += block_size) {
      FARM_RETURN_IF_ERROR(sink(std::string_view(r.body).substr(at, block_size)));
    }
    return Status::Ok();
  }

 private:
  Status Lookup(const std::string& url, FakeResource* out) {
    std::unique_lock<std::mutex> lock(mu_);
    counts_[url] += 1;
    if (held_.count(url) > 0) {
      ++waiting_;
      released_.wait(lock, [&] { return held_.count(url) == 0; });
      --waiting_;
    }
    auto it = resources_.find(url);
    if (it == resources_.end()) return Status::NotFound(url + " answered HTTP 404");
    if (!it->second.failure.ok()) return it->second.failure;
    *out = it->second;
    return Status::Ok();
  }
  mutable std::mutex mu_;
  std::condition_variable released_;
  std::set<std::string> held_;
  int waiting_ = 0;
  std::map<std::string, FakeResource> resources_;
  std::map<std::string, int> counts_;
  std::map<std::string, int> not_modified_;
};

// What a scripted command does: its exit code and output.
struct FakeRun {
  int exit_code = 0;
  std::string out;
  std::string err;
};

class ScriptedRunner final : public ProcessRunner {
 public:
  using Handler = std::function<FakeRun(const ProcessSpec&)>;
  explicit ScriptedRunner(Handler handler) : handler_(std::move(handler)) {}

  Result<std::unique_ptr<Process>> Start(const ProcessSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(spec.argv);
    }
    return std::unique_ptr<Process>(new Done(handler_(spec)));
  }
  std::vector<std::vector<std::string>> commands() const {
    std::lock_guard<std::mutex> lock(mu_);
    return commands_;
  }

 private:
  class Done final : public Process {
   public:
    explicit Done(FakeRun run) : run_(std::move(run)) {}
    pid_t pid() const override { return 1; }
    ProcessResult Wait(const LineCallback& on_line, int64_t) override {
      Emit(on_line, OutputStream::kStdout, run_.out);
      Emit(on_line, OutputStream::kStderr, run_.err);
      ProcessResult r;
      r.exit_code = run_.exit_code;
      return r;
    }
    void Kill(int64_t) override {}

   private:
    static void Emit(const LineCallback& cb, OutputStream stream, const std::string& text) {
      if (!cb) return;
      size_t start = 0;
      while (start < text.size()) {
        size_t nl = text.find('\n', start);
        cb(stream, text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    FakeRun run_;
  };
  Handler handler_;
  mutable std::mutex mu_;
  std::vector<std::vector<std::string>> commands_;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_FAKE_UPSTREAM_H_
