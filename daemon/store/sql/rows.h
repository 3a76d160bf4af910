// Reading the rows of a prepared statement: the loops every store query would otherwise
// spell out. Every read is bounded by the caller's row count, so a table that grew past
// what a query expects cannot make one call read without end.
#ifndef FARM_DAEMON_STORE_SQL_ROWS_H_
#define FARM_DAEMON_STORE_SQL_ROWS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/status.h"
#include "daemon/store/sql/db.h"

namespace farm::store {

// The type `from_row` makes of a row.
template <typename FromRow>
using RowOf = std::decay_t<std::invoke_result_t<FromRow&, const Stmt&>>;

// Column `col` of the current row into `*out`, read as the member's type asks: text into a
// string, an integer into an integer or an enum (as stored), nonzero into true.
template <typename T>
void ReadColumn(const Stmt& s, int col, T* out) {
  if constexpr (std::is_same_v<T, std::string>) {
    *out = s.Text(col);
  } else if constexpr (std::is_same_v<T, bool>) {
    *out = s.Int(col) != 0;
  } else {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>, "a column reads as text or integer");
    *out = static_cast<T>(s.Int(col));
  }
}

// A `Row` whose `members` are the current row's columns 0, 1, ... in order: a query's
// column list and the members it fills stand side by side, with no column index to keep
// in step by hand.
template <typename Row, typename... T>
Row ReadMembers(const Stmt& s, T Row::*... members) {
  Row row;
  int col = 0;
  (ReadColumn(s, col++, &(row.*members)), ...);
  return row;
}

// Steps `s` through its rows, at most `max_rows` of them, calling `on_row(s)` on each.
// `on_row` may return a Status: the first that is not Ok ends the reading and is returned,
// as is the first error of a step.
template <typename OnRow>
Status ForEachRow(Stmt& s, int64_t max_rows, OnRow&& on_row) {
  for (int64_t i = 0; i < max_rows; ++i) {
    FARM_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    if constexpr (std::is_same_v<std::invoke_result_t<OnRow&, const Stmt&>, Status>) {
      FARM_RETURN_IF_ERROR(on_row(static_cast<const Stmt&>(s)));
    } else {
      on_row(static_cast<const Stmt&>(s));
    }
  }
  return Status::Ok();
}

// `from_row` of each of the first `max_rows` rows of `s`, in order.
template <typename FromRow>
Result<std::vector<RowOf<FromRow>>> CollectRows(Stmt& s, int64_t max_rows, FromRow&& from_row) {
  std::vector<RowOf<FromRow>> out;
  FARM_RETURN_IF_ERROR(
      ForEachRow(s, max_rows, [&](const Stmt& row) { out.push_back(from_row(row)); }));
  return out;
}

// `from_row` of the first row of `s`; NotFound with `not_found` when it has none.
template <typename FromRow>
Result<RowOf<FromRow>> ReadOneRow(Stmt& s, FromRow&& from_row, std::string not_found) {
  FARM_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return Status::NotFound(std::move(not_found));
  return from_row(static_cast<const Stmt&>(s));
}

// `from_row` of the first row of `s`; nullopt when it has none.
template <typename FromRow>
Result<std::optional<RowOf<FromRow>>> ReadOptionalRow(Stmt& s, FromRow&& from_row) {
  FARM_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<RowOf<FromRow>>();
  return std::optional<RowOf<FromRow>>(from_row(static_cast<const Stmt&>(s)));
}

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_SQL_ROWS_H_
