// farmctl logs and download.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "cli/commands.h"
#include "cli/format.h"
#include "common/flags.h"
#include "common/fs.h"
#include "common/sha256.h"

namespace farm::cli {

namespace {

// While following, how the job stands (why it waits, how far its build is), on stderr so
// the log on stdout stays the log; said again only when it changed.
class JobStatusLine {
 public:
  JobStatusLine(const CommandEnv& env, int64_t job_id) : env_(env), job_id_(job_id) {}

  // Asks farmd at most every 2 s, however fast the log streams.
  void Refresh() {
    auto now = std::chrono::steady_clock::now();
    if (now - asked_ < std::chrono::seconds(2)) return;
    asked_ = now;
    farm::v1::GetJobRequest req;
    req.set_job_id(job_id_);
    farm::v1::Job job;
    if (!env_.client->stub()->GetJob(env_.client->Context().get(), req, &job).ok()) return;
    std::string waiting = FormatWaiting(job);
    std::string progress = FormatProgress(job);
    std::string text = !waiting.empty()    ? "waits: " + waiting
                       : !progress.empty() ? "progress: " + progress
                                           : "";
    if (text.empty() || text == last_) return;
    last_ = text;
    *env_.err << "farmctl: job " << job_id_ << " " << text << "\n";
    env_.err->flush();
  }

 private:
  const CommandEnv& env_;
  const int64_t job_id_;
  std::string last_;
  std::chrono::steady_clock::time_point asked_{};
};

Result<farm::v1::Job> GetJobOnce(const CommandEnv& env, int64_t job_id) {
  farm::v1::GetJobRequest req;
  req.set_job_id(job_id);
  farm::v1::Job job;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetJob, req, &job));
  return job;
}

bool IsTerminal(farm::v1::JobState s) {
  return s == farm::v1::JOB_SUCCEEDED || s == farm::v1::JOB_FAILED || s == farm::v1::JOB_CANCELLED;
}

}  // namespace

Status LogsCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 2)
    return Status::InvalidArgument("usage: farmctl logs JOB [--follow]");
  farm::v1::GetJobLogRequest req;
  try {
    req.set_job_id(std::stoll(flags.positionals()[1]));
  } catch (const std::exception&) {
    return Status::InvalidArgument("JOB must be a number");
  }
  FARM_ASSIGN_OR_RETURN(int64_t attempt, flags.GetInt("attempt", 0));
  FARM_ASSIGN_OR_RETURN(int64_t tail, flags.GetInt("tail", 0));
  req.set_attempt(static_cast<int32_t>(attempt));
  req.set_tail(static_cast<int32_t>(tail));
  bool follow = flags.Has("follow");
  const bool one_attempt = attempt > 0;
  JobStatusLine status(env, req.job_id());
  // Following polls once a second; a day of polling is the most one command waits.
  for (int round = 0; round < 86400; ++round) {
    if (follow && !env.json) status.Refresh();
    farm::v1::GetJobLogResponse resp;
    FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetJobLog, req, &resp));
    for (const auto& line : resp.lines()) {
      *env.out << (env.json ? ToJson(line) : FormatLogLine(line, false)) << "\n";
      req.set_after_seq(line.seq());
      if (req.attempt() == 0) req.set_attempt(line.attempt());
    }
    req.set_tail(0);
    env.out->flush();
    if (!follow && (resp.finished() || resp.lines_size() < 1000)) break;
    if (resp.finished()) {
      // The attempt's log ended. Following the job (no --attempt) goes on until the job
      // ends: a job that has not run yet, or waits to be retried, has more log to come.
      if (one_attempt) break;
      FARM_ASSIGN_OR_RETURN(farm::v1::Job job, GetJobOnce(env, req.job_id()));
      if (job.attempt() > req.attempt()) {  // a later attempt started: follow it
        req.set_attempt(req.attempt() == 0 ? job.attempt() : req.attempt() + 1);
        req.set_after_seq(0);
        continue;
      }
      if (IsTerminal(job.state())) break;
    }
    if (resp.lines_size() == 0) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return Status::Ok();
}

Status DownloadOne(const CommandEnv& env, const farm::v1::Artifact& artifact,
                   const std::string& dir) {
  farm::v1::GetArtifactRequest req;
  req.set_artifact_id(artifact.id());
  auto ctx = env.client->Context(false);
  auto reader = env.client->stub()->DownloadArtifact(ctx.get(), req);
  std::string path = dir + "/" + artifact.filename();
  std::string tmp = path + ".part";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  Sha256 hash;
  farm::v1::ArtifactChunk chunk;
  while (reader->Read(&chunk)) {
    out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    hash.Update(chunk.data());
  }
  out.close();
  FARM_RETURN_IF_ERROR(FromGrpc(reader->Finish(), env.client->address()));
  if (hash.HexDigest() != artifact.sha256()) {
    std::filesystem::remove(tmp);
    return Status::DataLoss("downloaded " + artifact.filename() + " does not match its sha256");
  }
  std::filesystem::rename(tmp, path);
  *env.out << "wheel: " << std::filesystem::absolute(path).string() << "  sha256 "
           << artifact.sha256() << "\n";
  return Status::Ok();
}

// Saves the artifact's signed statements beside the wheel at `path` (PATH.intoto.jsonl, the
// name `farmctl verify PATH` reads), so that the download verifies as the index's would.
Status SaveProvenance(const CommandEnv& env, const farm::v1::Artifact& artifact,
                      const std::string& path) {
  farm::v1::GetArtifactRequest req;
  req.set_artifact_id(artifact.id());
  farm::v1::ArtifactProvenance resp;
  grpc::Status call =
      env.client->stub()->GetArtifactProvenance(env.client->Context().get(), req, &resp);
  if (call.error_code() == grpc::StatusCode::UNIMPLEMENTED) return Status::Ok();  // signs none
  FARM_RETURN_IF_ERROR(FromGrpc(call, env.client->address()));
  const std::string file = path + ".intoto.jsonl";
  if (resp.intoto_jsonl().empty()) {
    *env.out << "provenance: none signed for " << artifact.filename() << "\n";
    return Status::Ok();
  }
  FARM_RETURN_IF_ERROR(fs::WriteFileAtomic(file, resp.intoto_jsonl()));
  *env.out << "provenance: " << std::filesystem::absolute(file).string() << "\n";
  return Status::Ok();
}

// Downloads every wheel of the build into `dir` under its own name, each with its signed
// statements beside it (SaveProvenance). A wheel's name holds
// its identity, so one name is one file: copies of one wheel (jobs answered from an
// earlier build) are fetched once, a file already in `dir` with the same sha256 is kept,
// and two different files that would share a path fail the command before anything is
// written over.
Status DownloadArtifacts(const CommandEnv& env, const farm::v1::Build& build,
                         const std::string& dir) {
  FARM_RETURN_IF_ERROR(fs::MakeDirs(dir));
  std::map<std::string, std::pair<const farm::v1::Artifact*, int64_t>>
      plan;  // name -> (wheel, job)
  for (const auto& job : build.jobs()) {
    for (const auto& a : job.artifacts()) {
      auto [it, fresh] = plan.emplace(a.filename(), std::make_pair(&a, job.id()));
      if (!fresh && it->second.first->sha256() != a.sha256()) {
        return Status::AlreadyExists("two different wheels would share " + dir + "/" +
                                     a.filename() + ": job " + std::to_string(it->second.second) +
                                     " (sha256 " + it->second.first->sha256() + ") and job " +
                                     std::to_string(job.id()) + " (sha256 " + a.sha256() +
                                     "); nothing was downloaded");
      }
    }
  }
  if (plan.empty()) {
    // The build exists and has nothing to fetch: the operation failed (exit 1), the usage
    // was right.
    return Status::FailedPrecondition("build " + std::to_string(build.id()) + " (" +
                                      StateName(build.state()) + ") has no wheel to download");
  }
  for (const auto& [name, entry] : plan) {
    const std::string path = dir + "/" + name;
    if (!std::filesystem::exists(path)) continue;
    auto sha = Sha256FileHex(path);
    if (!sha.ok() || *sha != entry.first->sha256()) {
      return Status::AlreadyExists(path +
                                   " exists with other content; not overwritten (move it "
                                   "away or download into another directory)");
    }
  }
  for (const auto& [name, entry] : plan) {
    const std::string path = dir + "/" + name;
    if (std::filesystem::exists(path)) {
      *env.out << "wheel: " << std::filesystem::absolute(path).string() << "  sha256 "
               << entry.first->sha256() << " (already there)\n";
    } else {
      FARM_RETURN_IF_ERROR(DownloadOne(env, *entry.first, dir));
    }
    FARM_RETURN_IF_ERROR(SaveProvenance(env, *entry.first, path));
  }
  return Status::Ok();
}

Status DownloadCommand(const CommandEnv& env, const Flags& flags) {
  if (flags.positionals().size() < 2 || !flags.Has("dir")) {
    return Status::InvalidArgument("usage: farmctl download BUILD --dir DIR");
  }
  farm::v1::GetBuildRequest req;
  try {
    req.set_build_id(std::stoll(flags.positionals()[1]));
  } catch (const std::exception&) {
    return Status::InvalidArgument("BUILD must be a number");
  }
  farm::v1::Build build;
  FARM_RETURN_IF_ERROR(env.client->Call(&FarmStub::GetBuild, req, &build));
  return DownloadArtifacts(env, build, flags.Get("dir"));
}

}  // namespace farm::cli
