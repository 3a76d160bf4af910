// Job logs: the lines of each attempt, packed into log_chunks rows (log_chunk.h). Logs
// stored before migration 020 stay in log_lines, one row per line, and are still read.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>

#include "daemon/store/log_chunk.h"
#include "daemon/store/sql_store/sql_store.h"

namespace farm::store {
namespace {

std::string TruncatedLogLine(int64_t max_bytes) {
  return "farm: log truncated: this attempt's log reached farmd's limit of " +
         std::to_string(max_bytes) +
         " bytes (--max-log-bytes); the rest of its output is not stored, the build goes on";
}

// The worker's own lines (what failed, where the wheel went) are kept past the limit, up
// to a reserve of their own.
int64_t SystemLinesLimit(int64_t max_bytes) {
  constexpr int64_t kSystemReserveBytes = 256 << 10;
  return max_bytes > INT64_MAX - kSystemReserveBytes ? INT64_MAX : max_bytes + kSystemReserveBytes;
}

// What a line counts against the limit: its text and its line break, so that a build
// printing empty lines cannot store them without end.
int64_t LineCost(const std::string& text) { return static_cast<int64_t>(text.size()) + 1; }

// A chunk smaller than this is packed again with the next lines rather than left as a
// row of its own: a build printing a line now and then would otherwise cost a row (some
// 70 bytes of row and index) per line the worker sends alone.
constexpr int64_t kCoalesceBelowBytes = 4096;

// Stores `lines` (seq ascending, past every stored line) as chunks of the attempt's log,
// the attempt's last chunk with them when it is small.
Status StoreChunks(Db& db, int64_t job_id, int attempt, std::vector<LogLineRow> lines) {
  FARM_ASSIGN_OR_RETURN(auto last,
                        db.Prepare("SELECT id, raw_bytes FROM log_chunks WHERE job_id = ? AND "
                                   "attempt = ? ORDER BY last_seq DESC LIMIT 1"));
  last->Bind(job_id).Bind(attempt);
  FARM_ASSIGN_OR_RETURN(bool has_last, last->Step());
  const bool small = has_last && last->Int(1) < kCoalesceBelowBytes;
  const int64_t id = has_last ? last->Int(0) : 0;
  last.reset();  // no statement stays open on the rows changed below
  if (small) {
    std::vector<LogLineRow> merged;
    {
      FARM_ASSIGN_OR_RETURN(auto read, db.Prepare("SELECT codec, raw_bytes, data FROM "
                                                  "log_chunks WHERE id = ?"));
      read->Bind(id);
      FARM_ASSIGN_OR_RETURN(bool found, read->Step());
      if (found) {
        FARM_RETURN_IF_ERROR(UnpackLogChunk(static_cast<int>(read->Int(0)), read->Int(1),
                                            read->Text(2), 0, SIZE_MAX, &merged));
      }
    }
    merged.insert(merged.end(), std::make_move_iterator(lines.begin()),
                  std::make_move_iterator(lines.end()));
    lines = std::move(merged);
    FARM_ASSIGN_OR_RETURN(auto del, db.Prepare("DELETE FROM log_chunks WHERE id = ?"));
    del->Bind(id);
    FARM_RETURN_IF_ERROR(del->Run());
  }
  for (const LogChunk& c : PackLogChunks(lines)) {
    FARM_ASSIGN_OR_RETURN(auto ins, db.Prepare("INSERT INTO log_chunks(job_id, attempt, "
                                               "first_seq, last_seq, lines, codec, raw_bytes, "
                                               "data) VALUES (?,?,?,?,?,?,?,?)"));
    ins->Bind(job_id).Bind(attempt).Bind(c.first_seq).Bind(c.last_seq).Bind(c.lines);
    ins->Bind(c.codec).Bind(c.raw_bytes).BindBlob(c.data);
    FARM_RETURN_IF_ERROR(ins->Run());
  }
  return Status::Ok();
}

}  // namespace

Result<int64_t> SqlStore::AppendLogLines(int64_t job_id, int attempt,
                                         const std::vector<LogLineRow>& lines, int64_t max_bytes) {
  Locked lock(this);
  Transaction txn(db_.get());
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(
      auto q, db_->Prepare(
                  "SELECT log_acked_seq, log_bytes FROM attempts WHERE job_id = ? AND number = ?"));
  q->Bind(job_id).Bind(attempt);
  FARM_ASSIGN_OR_RETURN(bool found, q->Step());
  if (!found)
    return Status::NotFound("no attempt " + std::to_string(attempt) + " of job " +
                            std::to_string(job_id));
  int64_t acked = q->Int(0);
  int64_t bytes = q->Int(1);
  const int64_t start = acked;
  std::vector<LogLineRow> kept;
  for (const LogLineRow& line : lines) {
    if (line.seq <= acked) continue;   // already stored: a resend after a lost ack
    if (line.seq != acked + 1) break;  // gap: the sender resends from acked + 1
    acked = line.seq;
    const int64_t cost = LineCost(line.text);
    if (line.stream != kLogStreamSystem) {
      if (bytes > max_bytes) continue;  // truncated: acknowledged, not stored
      if (cost > max_bytes - bytes) {   // this line crosses the limit: say so instead
        kept.push_back({line.seq, kLogStreamSystem, TruncatedLogLine(max_bytes), line.time_ms});
        bytes = max_bytes < INT64_MAX ? max_bytes + 1 : max_bytes;  // past it, and said
        continue;
      }
    } else if (bytes >= SystemLinesLimit(max_bytes)) {
      continue;
    }
    bytes += cost;
    kept.push_back(line);
  }
  if (!kept.empty()) FARM_RETURN_IF_ERROR(StoreChunks(*db_, job_id, attempt, std::move(kept)));
  if (acked != start) {
    FARM_ASSIGN_OR_RETURN(auto up, db_->Prepare("UPDATE attempts SET log_acked_seq = ?, log_bytes "
                                                "= ? WHERE job_id = ? AND number = ?"));
    up->Bind(acked).Bind(bytes).Bind(job_id).Bind(attempt);
    FARM_RETURN_IF_ERROR(up->Run());
  }
  FARM_RETURN_IF_ERROR(txn.Commit());
  if (acked != start) Bump();
  return acked;
}

Result<std::vector<LogLineRow>> SqlStore::GetLogLines(int64_t job_id, int attempt,
                                                      int64_t after_seq, int limit) {
  Locked lock(this);
  if (limit <= 0) return std::vector<LogLineRow>();
  const auto wanted = static_cast<size_t>(limit);
  // Lines stored one per row before log chunks existed come first: they are older.
  FARM_ASSIGN_OR_RETURN(
      auto old,
      db_->Prepare(
          "SELECT seq, stream, text, time_ms FROM log_lines WHERE job_id = ? AND attempt = ? "
          "AND seq > ? ORDER BY seq LIMIT ?"));
  old->Bind(job_id).Bind(attempt).Bind(after_seq).Bind(limit);
  FARM_ASSIGN_OR_RETURN(
      std::vector<LogLineRow> out, CollectRows(*old, limit, [](const Stmt& r) {
        return LogLineRow{r.Int(0), static_cast<int>(r.Int(1)), r.Text(2), r.Int(3)};
      }));
  if (!out.empty()) after_seq = out.back().seq;
  // Chunks hold disjoint seq ranges in order, so those ending past after_seq, by last_seq,
  // hold the next lines; `wanted` chunks hold at least `wanted` lines.
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT codec, raw_bytes, data FROM log_chunks WHERE job_id = ? AND "
                           "attempt = ? AND last_seq > ? ORDER BY last_seq LIMIT ?"));
  s->Bind(job_id).Bind(attempt).Bind(after_seq).Bind(limit);
  while (out.size() < wanted) {
    FARM_ASSIGN_OR_RETURN(bool row, s->Step());
    if (!row) break;
    FARM_RETURN_IF_ERROR(UnpackLogChunk(static_cast<int>(s->Int(0)), s->Int(1), s->Text(2),
                                        after_seq, wanted, &out));
  }
  return out;
}

Result<int64_t> SqlStore::LastLogSeq(int64_t job_id, int attempt) {
  Locked lock(this);
  FARM_ASSIGN_OR_RETURN(
      auto s, db_->Prepare("SELECT log_acked_seq FROM attempts WHERE job_id = ? AND number = ?"));
  s->Bind(job_id).Bind(attempt);
  FARM_ASSIGN_OR_RETURN(bool row, s->Step());
  return row ? s->Int(0) : 0;
}

}  // namespace farm::store
