// RequestStore: wheel requests (migration 028, daemon/requests/). A narrow interface of
// its own beside Store, as the webhook outbox is: the SQL store (SQLite and PostgreSQL)
// implements both, and farmd finds it with AsRequestStore. Thread-safe as the Store is.
#ifndef FARM_DAEMON_STORE_REQUEST_STORE_H_
#define FARM_DAEMON_STORE_REQUEST_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace farm::store {

class Store;

// One distinct requested cell. `state` is a requests::State value.
struct RequestRow {
  int64_t id = 0;
  std::string key;  // digest of the checked fields: identical requests share it
  std::string package;
  std::string version;  // "" for the newest the farm's recipe builds
  std::string python;
  std::string torch;
  std::string cuda;
  std::string compute_capability;
  std::string platform;
  int state = 0;
  std::string reason;      // why it was refused or failed
  std::string decided_by;  // the admin who refused it; "" when the farm's matching did
  std::string recipe_name;
  std::string arch_list;  // the recipe's arch list the cell builds
  int64_t build_id = 0;
  int64_t job_id = 0;
  std::string wheel;  // the wheel's file name once built
  int64_t filings = 0;
  std::string first_by;  // the principal who filed it first; "" for anonymous
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

// Who filed a request: a principal, or "" and the address of an anonymous caller.
struct RequestFiling {
  int64_t request_id = 0;
  std::string principal;
  std::string address;
  int64_t created_ms = 0;
};

// A request quota: at most `max` filings since `since_ms` by the filing's principal (or,
// for an anonymous one, its address). max < 0: unlimited.
struct FilingLimit {
  int64_t max = -1;
  int64_t since_ms = 0;
};

class RequestStore {
 public:
  virtual ~RequestStore() = default;

  // In one transaction: checks `limit` against the filer's filings (ResourceExhausted
  // when it is used up, nothing stored), inserts `row` unless a row with its key exists
  // (then that row stands: this is the merge), and records `filing` on the row. Returns
  // the row as it stands and whether this call created it.
  virtual Result<std::pair<RequestRow, bool>> FileRequest(const RequestRow& row,
                                                          const RequestFiling& filing,
                                                          const FilingLimit& limit) = 0;
  // Moves request `to.id` from state `from_state` to `to` (state, reason, decided_by,
  // recipe_name, arch_list, build_id, job_id, wheel, updated_ms), only when it is still in
  // `from_state`: of callers racing on one row exactly one wins. Returns whether it did.
  virtual Result<bool> MoveRequest(int from_state, const RequestRow& to) = 0;
  // NotFound for no such request.
  virtual Result<RequestRow> GetRequest(int64_t id) = 0;
  // Newest first, ids < before_id (0: from the newest), in `state` (0: any), at most
  // `limit`.
  virtual Result<std::vector<RequestRow>> ListRequests(int state, int64_t before_id, int limit) = 0;
  // The filings of request `id`, oldest first, at most `limit`.
  virtual Result<std::vector<RequestFiling>> ListRequestFilings(int64_t id, int limit) = 0;
};

// The RequestStore of `store` when it has one (the SQL store does); null otherwise.
RequestStore* AsRequestStore(Store* store);

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_REQUEST_STORE_H_
