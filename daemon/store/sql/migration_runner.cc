#include "daemon/store/sql/migration_runner.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace farm::store {
namespace {

// Created before any numbered migration; a database without it predates numbering.
constexpr char kCreateBookkeeping[] =
    "CREATE TABLE schema_migrations ("
    "  number INTEGER PRIMARY KEY,"
    "  file_name TEXT NOT NULL,"
    "  source TEXT NOT NULL,"  // applied: run by this runner; user_version: adopted
    "  applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))";

// PostgreSQL's: a PostgreSQL database never had PRAGMA user_version, so there is nothing
// to adopt and schema_migrations alone says what was applied.
constexpr char kCreatePostgresBookkeeping[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    "  number BIGINT PRIMARY KEY,"
    "  file_name TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  applied_at TEXT NOT NULL DEFAULT "
    "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))";

// "NNN_name.sql" -> NNN; anything else is an error.
Result<int> MigrationNumber(const std::string& file_name) {
  size_t digits = 0;
  while (digits < file_name.size() && std::isdigit(static_cast<unsigned char>(file_name[digits]))) {
    ++digits;
  }
  const std::string suffix = ".sql";
  bool shaped = digits > 0 && digits <= 6 && digits < file_name.size() &&
                file_name[digits] == '_' && file_name.size() > digits + 1 + suffix.size() &&
                file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (!shaped) {
    return Status::InvalidArgument("migration file " + file_name + " is not named NNN_name.sql");
  }
  return std::stoi(file_name.substr(0, digits));
}

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

Result<bool> HasBookkeeping(Db& db) {
  FARM_ASSIGN_OR_RETURN(
      auto q,
      db.Prepare(
          "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"));
  return q->Step();
}

Result<int64_t> UserVersion(Db& db) {
  FARM_ASSIGN_OR_RETURN(auto q, db.Prepare("PRAGMA user_version"));
  FARM_ASSIGN_OR_RETURN(bool row, q->Step());
  return row ? q->Int(0) : 0;
}

Status Record(Db& db, const Migration& m, const std::string& source) {
  FARM_ASSIGN_OR_RETURN(
      auto ins,
      db.Prepare("INSERT INTO schema_migrations(number, file_name, source) VALUES (?, ?, ?)"));
  ins->Bind(m.number).Bind(m.file_name).Bind(source);
  return ins->Run();
}

// Every table, index, view, trigger and table column, as "index jobs_by_state" or
// "column jobs.build_key": what a comparison of two schemas needs, without the SQL text
// (comments and whitespace differ between a migration and the ALTERs that led there).
Result<std::set<std::string>> SchemaObjects(Db& db) {
  std::set<std::string> out;
  FARM_ASSIGN_OR_RETURN(
      auto objects,
      db.Prepare("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
                 "AND name != 'schema_migrations'"));
  for (int i = 0; i < 1'000'000; ++i) {
    FARM_ASSIGN_OR_RETURN(bool row, objects->Step());
    if (!row) break;
    out.insert(objects->Text(0) + " " + objects->Text(1));
  }
  FARM_ASSIGN_OR_RETURN(
      auto columns,
      db.Prepare("SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p "
                 "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name != "
                 "'schema_migrations'"));
  for (int i = 0; i < 1'000'000; ++i) {
    FARM_ASSIGN_OR_RETURN(bool row, columns->Step());
    if (!row) break;
    out.insert("column " + columns->Text(0) + "." + columns->Text(1));
  }
  return out;
}

// A database from before numbering says only "the first n files ran". Trust that only
// when its schema holds everything those files create today.
Status CheckLegacySchema(Db& db, const std::vector<Migration>& plan, size_t n) {
  FARM_ASSIGN_OR_RETURN(auto reference, Db::Open(":memory:"));
  for (size_t i = 0; i < n; ++i) {
    FARM_RETURN_IF_ERROR(
        reference->Exec(plan[i].sql)
            .WithContext("building the reference schema from " + plan[i].file_name));
  }
  FARM_ASSIGN_OR_RETURN(auto want, SchemaObjects(*reference));
  FARM_ASSIGN_OR_RETURN(auto have, SchemaObjects(db));
  std::vector<std::string> missing, extra;
  std::set_difference(want.begin(), want.end(), have.begin(), have.end(),
                      std::back_inserter(missing));
  std::set_difference(have.begin(), have.end(), want.begin(), want.end(),
                      std::back_inserter(extra));
  if (missing.empty()) return Status::Ok();
  return Status::FailedPrecondition(
      "the database records schema version " + std::to_string(n) +
      " (by position, from before migrations were recorded by number), but it lacks what " +
      plan.front().file_name + " .. " + plan[n - 1].file_name + " create: " + Join(missing) +
      (extra.empty() ? "" : "; it has what those files do not create: " + Join(extra)) +
      ". A migration file was probably renumbered after this database was made; bring its "
      "schema to those files by hand before starting farmd");
}

// Creates schema_migrations once, recording what PRAGMA user_version says was applied.
Status AdoptBookkeeping(Db& db, const std::vector<Migration>& plan) {
  if (db.dialect() == Dialect::kPostgres) return db.Exec(kCreatePostgresBookkeeping);
  Transaction txn(&db);
  FARM_RETURN_IF_ERROR(txn.status());
  FARM_ASSIGN_OR_RETURN(bool has, HasBookkeeping(db));
  if (has) return Status::Ok();  // rolls back the empty transaction
  FARM_ASSIGN_OR_RETURN(int64_t version, UserVersion(db));
  if (version < 0 || version > static_cast<int64_t>(plan.size())) {
    return Status::FailedPrecondition("database schema version " + std::to_string(version) +
                                      " is newer than this farmd supports (" +
                                      std::to_string(plan.size()) + ")");
  }
  size_t n = static_cast<size_t>(version);
  if (n > 0) FARM_RETURN_IF_ERROR(CheckLegacySchema(db, plan, n));
  FARM_RETURN_IF_ERROR(db.Exec(kCreateBookkeeping));
  for (size_t i = 0; i < n; ++i) FARM_RETURN_IF_ERROR(Record(db, plan[i], "user_version"));
  return txn.Commit();
}

Result<std::map<int64_t, std::string>> Applied(Db& db) {
  std::map<int64_t, std::string> out;
  FARM_ASSIGN_OR_RETURN(
      auto q, db.Prepare("SELECT number, file_name FROM schema_migrations ORDER BY number"));
  for (int i = 0; i < 1'000'000; ++i) {
    FARM_ASSIGN_OR_RETURN(bool row, q->Step());
    if (!row) break;
    out.emplace(q->Int(0), q->Text(1));
  }
  return out;
}

Status CheckApplied(const std::map<int64_t, std::string>& applied,
                    const std::vector<Migration>& plan) {
  for (const auto& [number, file_name] : applied) {
    if (number < 1 || number > static_cast<int64_t>(plan.size())) {
      return Status::FailedPrecondition("the database has migration " + file_name +
                                        " applied, which this farmd does not "
                                        "have (its newest is " +
                                        (plan.empty() ? "none" : plan.back().file_name) +
                                        "): it was made by a newer farmd");
    }
    const Migration& m = plan[static_cast<size_t>(number - 1)];
    if (m.file_name != file_name) {
      return Status::FailedPrecondition(
          "migration " + std::to_string(number) + " was applied to the database as " + file_name +
          ", but this farmd's migration with that number is " + m.file_name +
          ": a migration file was renumbered or renamed after it was applied");
    }
  }
  return Status::Ok();
}

// One migration, its record and user_version commit together or not at all.
Status ApplyOne(Db& db, const Migration& m) {
  Transaction txn(&db);
  FARM_RETURN_IF_ERROR(txn.status());
  {
    // Another farmd on the same file may have applied it since we looked.
    FARM_ASSIGN_OR_RETURN(auto applied, Applied(db));
    if (applied.count(m.number)) return Status::Ok();
  }
  FARM_RETURN_IF_ERROR(db.Exec(m.sql).WithContext("migration " + m.file_name));
  FARM_RETURN_IF_ERROR(Record(db, m, "applied"));
  if (db.dialect() == Dialect::kSqlite) {
    FARM_RETURN_IF_ERROR(db.Exec("PRAGMA user_version=" + std::to_string(m.number)));
  }
  return txn.Commit();
}

}  // namespace

Result<std::vector<Migration>> PlanMigrations(const std::vector<MigrationFile>& files) {
  std::vector<Migration> plan;
  for (const MigrationFile& f : files) {
    FARM_ASSIGN_OR_RETURN(int number, MigrationNumber(f.file_name));
    plan.push_back(Migration{number, f.file_name, f.sql});
  }
  std::stable_sort(plan.begin(), plan.end(),
                   [](const Migration& a, const Migration& b) { return a.number < b.number; });
  for (size_t i = 0; i < plan.size(); ++i) {
    if (i > 0 && plan[i].number == plan[i - 1].number) {
      return Status::InvalidArgument("migrations " + plan[i - 1].file_name + " and " +
                                     plan[i].file_name + " have the same number");
    }
    if (plan[i].number != static_cast<int>(i) + 1) {
      return Status::InvalidArgument("no migration numbered " + std::to_string(i + 1) +
                                     (i == 0 ? "" : " (after " + plan[i - 1].file_name + ")") +
                                     "; next is " + plan[i].file_name +
                                     ": migrations are numbered 1, 2, 3, ... without gaps");
    }
  }
  return plan;
}

Status MigrateSchema(Db& db, const std::vector<MigrationFile>& files) {
  auto plan = PlanMigrations(files);
  if (!plan.ok()) return Status::FailedPrecondition(plan.status().message());
  FARM_RETURN_IF_ERROR(AdoptBookkeeping(db, *plan));
  FARM_ASSIGN_OR_RETURN(auto applied, Applied(db));
  FARM_RETURN_IF_ERROR(CheckApplied(applied, *plan));
  for (const Migration& m : *plan) {
    if (applied.count(m.number)) continue;
    FARM_RETURN_IF_ERROR(ApplyOne(db, m));
  }
  return Status::Ok();
}

}  // namespace farm::store
