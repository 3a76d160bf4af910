// Human-readable rendering of farm.v1 messages for farmctl, and JSON for --output json.
#ifndef FARM_CLI_FORMAT_H_
#define FARM_CLI_FORMAT_H_

#include <google/protobuf/message.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "farm/v1/client.pb.h"

namespace farm::cli {

// An enum value's name as a word: without `prefix`, in lower case ("BUILD_SUCCEEDED",
// "BUILD_" -> "succeeded").
std::string EnumWord(std::string_view name, std::string_view prefix);
std::string StateName(farm::v1::BuildState s);  // "succeeded"
std::string StateName(farm::v1::JobState s);
std::string CauseName(farm::v1::AttemptCause c);
std::string CellLabel(const farm::v1::MatrixCell& c);  // "py3.11 cuda13.0 [9.0;12.0a]"
// farmctl list: a header row, then per build its id, recipe, owner (a principal), state
// ("blocked" when no worker can take any of its unfinished build jobs, as the dashboard
// says), its jobs counted by state ("3 jobs: 1 ok, 2 failed"), the Python/torch/CUDA values
// and arch lists of its cells, when it was created and how long it took (or has run, "for
// 2m 3s", at `now_ms`). Columns aligned with spaces.
std::string FormatBuildList(const std::vector<farm::v1::Build>& builds, int64_t now_ms);
// Rows as lines of columns aligned with two spaces between them (trailing spaces dropped).
std::string AlignColumns(const std::vector<std::vector<std::string>>& rows);
// A worker as people name it: its name, or its id when farmd did not say (a worker no
// longer registered, or an older farmd).
std::string WorkerLabel(const std::string& name, const std::string& id);
// "validation of job 11 attempt 1" for a validation job; "" for a build job.
std::string ValidationLabel(const farm::v1::Job& j);
std::string FormatBuild(const farm::v1::Build& b);  // multi-line detail
std::string FormatJob(const farm::v1::Job& j);
std::string FormatWorker(const farm::v1::WorkerInfo& w);
// The header line above FormatWorker's lines (`farmctl workers`).
std::string WorkersHeader();
std::string FormatLogLine(const farm::v1::LogLine& l, bool prefix_job);
// Why a pending job waits: the summary, then "  <worker>: <reason>" per worker that cannot
// take it, one per line; "" for a job that is not pending or has no reason.
std::string FormatWaiting(const farm::v1::Job& j);
// How far the job's running attempt is: "12/40 units (30%), peak RSS 1.2 GiB", "7 compiles
// done", or "" when its worker reported nothing yet.
std::string FormatProgress(const farm::v1::Job& j);
// One line of JSON in the proto3 mapping with the proto's field names, except that 64-bit
// integers are numbers, not strings. One document per line, so logs can stream JSON Lines.
std::string ToJson(const google::protobuf::Message& m);

// "torch 2.11.0+cu130, lock 3f2a9c41d0e2: 33 packages, 4.5 GiB; since job 12: torch 2.11.0
// -> 2.11.1" (a provisioned job's environment lock).
std::string FormatLockInfo(const farm::v1::LockInfo& info);

}  // namespace farm::cli

#endif  // FARM_CLI_FORMAT_H_
