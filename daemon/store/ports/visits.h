// Visits: batching several calls on the store into one visit (or one transaction), for a
// caller that needs several reads, or a batch of alike writes.
#ifndef FARM_DAEMON_STORE_PORTS_VISITS_H_
#define FARM_DAEMON_STORE_PORTS_VISITS_H_

#include <functional>

#include "common/status.h"

namespace farm::store {

class Visits {
 public:
  virtual ~Visits() = default;

  // Runs `calls`, several calls on this store and nothing slow besides (no other service's
  // lock, no network; a log line at most), as
  // one visit: other threads' calls wait until it returns, so a handler that needs several
  // reads queues for the store once instead of once per read. Calls that write each commit
  // as they would alone. Returns what `calls` returns. A store without the notion runs it.
  virtual Status Together(const std::function<Status()>& calls) { return calls(); }
  // Together, with every write of `calls` in one transaction: committed when `calls`
  // returns Ok, all undone when it does not. A call inside whose own transaction fails
  // undoes only its writes (a savepoint). For a batch of alike writes: one commit, and one
  // write of each shared page, instead of one each. A store without transactions runs the
  // calls as Together does.
  virtual Status TogetherInOneTransaction(const std::function<Status()>& calls) {
    return Together(calls);
  }
};

}  // namespace farm::store

#endif  // FARM_DAEMON_STORE_PORTS_VISITS_H_
