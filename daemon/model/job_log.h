// Reading a job's log the way a release engineer does: which lines are errors (a pip build
// writes most of its progress to stderr, so stderr alone says nothing), where each phase
// of an attempt starts (fetch, build, checks, validation, upload: the worker's own
// "farm: ..." lines mark them), which phase a failed attempt ended in, and the few lines
// that say why it failed. Pure functions; thread-safe.
#ifndef FARM_DAEMON_MODEL_JOB_LOG_H_
#define FARM_DAEMON_MODEL_JOB_LOG_H_

#include <string>
#include <vector>

#include "daemon/store/store.h"

namespace farm::model {

// "error" for a line that reports an error (a compiler diagnostic, "error:", a traceback,
// ninja's FAILED), "warning" for a warning, else "". The stream does not decide it.
std::string LineLevel(const std::string& text);

// The phase a worker's SYSTEM line starts ("fetch", "build", "checks", "validation",
// "upload"), or "" when the line starts none. Lines before the first marker belong to
// "setup".
std::string LinePhase(int stream, const std::string& text);

// The phase an attempt that ended with `cause` and `detail` failed in (same names), or ""
// when it did not fail in one (a lost worker, a cancel).
std::string FailurePhase(int cause, const std::string& detail);

// The lines of `tail` (the end of a failed attempt's log) that say why it failed: the
// first compiler diagnostic with the lines that show it, and the last error line after it;
// without error lines, the last lines of output. ANSI escapes removed, each line cut to
// 400 bytes, at most 8 lines.
std::vector<std::string> MeaningfulLines(const std::vector<store::LogLineRow>& tail);

// `text` without ANSI escape sequences.
std::string StripAnsi(const std::string& text);

}  // namespace farm::model

#endif  // FARM_DAEMON_MODEL_JOB_LOG_H_
