// The SQLite-to-PostgreSQL query translation of the PostgreSQL backend (no server needed).
#include <gtest/gtest.h>

#include "daemon/store/sql/pg_db.h"
#include "tests/support/test_util.h"

namespace farm::store {
namespace {

Result<std::vector<std::string>> Key(const std::string& table) {
  if (table == "publish_scanned") return std::vector<std::string>{"artifact_id"};
  if (table == "pairs") return std::vector<std::string>{"a", "b"};
  return Status::NotFound("no table " + table);
}

std::string Translate(const std::string& sql) {
  auto r = TranslateToPostgres(sql, Key);
  EXPECT_OK(r.status());
  return r.ok() ? r.value() : "";
}

TEST(PgTranslateTest, NumbersPlaceholdersOutsideStringLiterals) {
  EXPECT_EQ(Translate("SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)"),
            "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)");
  EXPECT_EQ(Translate("SELECT 'it''s ?' WHERE x = ?"), "SELECT 'it''s ?' WHERE x = $1");
  EXPECT_EQ(Translate(""), "");
  // ?NNN is parameter NNN, and a bare ? after it the next one, as in SQLite.
  EXPECT_EQ(Translate("WHERE a < ?1 AND b = ?1 AND c = ?"), "WHERE a < $1 AND b = $1 AND c = $2");
  EXPECT_EQ(Translate("WHERE a = ?12"), "WHERE a = $12");
}

TEST(PgTranslateTest, TwoArgumentMaxAndMinBecomeGreatestAndLeast) {
  EXPECT_EQ(Translate("UPDATE t SET m = MAX(m, ?), n = min(n, (1 + 2)) WHERE id = ?"),
            "UPDATE t SET m = GREATEST(m, $1), n = LEAST(n, (1 + 2)) WHERE id = $2");
  // Aggregates keep their name, including ones whose argument has a call with commas.
  EXPECT_EQ(Translate("SELECT MAX(id), MIN(substr(a, 1, 2)), COALESCE(MAX(x), 0) FROM t"),
            "SELECT MAX(id), MIN(substr(a, 1, 2)), COALESCE(MAX(x), 0) FROM t");
  EXPECT_EQ(Translate("SELECT max_attempts, ATTEMPT_MAX(a, b) FROM t"),
            "SELECT max_attempts, ATTEMPT_MAX(a, b) FROM t");
}

TEST(PgTranslateTest, InsertOrIgnoreBecomesOnConflictDoNothing) {
  EXPECT_EQ(Translate("  INSERT OR IGNORE INTO j(a, b) VALUES (?, ?);  "),
            "INSERT INTO j(a, b) VALUES ($1, $2) ON CONFLICT DO NOTHING");
  EXPECT_EQ(Translate("INSERT OR IGNORE INTO j(a) SELECT id FROM k WHERE x = ?"),
            "INSERT INTO j(a) SELECT id FROM k WHERE x = $1 ON CONFLICT DO NOTHING");
}

TEST(PgTranslateTest, InsertOrReplaceUpdatesEveryColumnButTheKey) {
  EXPECT_EQ(Translate("INSERT OR REPLACE INTO publish_scanned(artifact_id, outcome, scanned_ms) "
                      "VALUES (?,?,?)"),
            "INSERT INTO publish_scanned(artifact_id, outcome, scanned_ms) VALUES ($1,$2,$3) "
            "ON CONFLICT (artifact_id) DO UPDATE SET outcome = EXCLUDED.outcome, "
            "scanned_ms = EXCLUDED.scanned_ms");
  EXPECT_EQ(Translate("INSERT OR REPLACE INTO pairs(a, b) VALUES (1, 2)"),
            "INSERT INTO pairs(a, b) VALUES (1, 2) ON CONFLICT (a, b) DO NOTHING");
  EXPECT_FALSE(TranslateToPostgres("INSERT OR REPLACE INTO nope(a) VALUES (1)", Key).ok());
  EXPECT_FALSE(TranslateToPostgres("INSERT OR REPLACE INTO pairs VALUES (1, 2)", Key).ok());
}

}  // namespace
}  // namespace farm::store
