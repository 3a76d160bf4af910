// ConnectionLimits: how many HTTP connections farmd holds at once, in all and per client
// address, so that one client (one IPv4 address, or one IPv6 /64, which a single host
// usually owns whole) cannot take every connection and starve the others. Pure
// bookkeeping, no sockets: the listener asks Admit() for each accepted connection and the
// connection holds the returned Slot until it closes.
//
// Thread-safety: every method may be called from any thread; a Slot may be destroyed on
// any thread, and must not outlive its ConnectionLimits.
#ifndef FARM_DAEMON_HTTP_SERVER_CONNECTION_LIMITS_H_
#define FARM_DAEMON_HTTP_SERVER_CONNECTION_LIMITS_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace farm::http {

enum class Admission {
  kAdmitted,
  kAddressFull,  // the client's address holds max_per_address connections
  kServerFull,   // the server holds max_total connections
};

class ConnectionLimits {
 public:
  // Both limits at least 1 (smaller values are raised to 1).
  ConnectionLimits(int max_total, int max_per_address);

  // Counts one connection of `client_key` (ClientKey()) until the slot is destroyed.
  // An empty slot (admitted() false) counts nothing; admission() says why.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot();

    bool admitted() const { return limits_ != nullptr; }
    Admission admission() const { return admission_; }

   private:
    friend class ConnectionLimits;
    Slot(ConnectionLimits* limits, std::string key, Admission admission)
        : limits_(limits), key_(std::move(key)), admission_(admission) {}
    void Release();

    ConnectionLimits* limits_ = nullptr;
    std::string key_;
    Admission admission_ = Admission::kServerFull;
  };

  // A slot for one more connection of `client_key`, or an empty one saying which limit is
  // reached (the per-address limit is checked first).
  Slot Admit(const std::string& client_key);

  int total() const;
  int of(const std::string& client_key) const;
  int max_total() const { return max_total_; }
  int max_per_address() const { return max_per_address_; }

 private:
  void Release(const std::string& key);

  const int max_total_;
  const int max_per_address_;
  mutable std::mutex mu_;
  int total_ = 0;
  std::unordered_map<std::string, int> by_key_;
};

// The key a client address is counted under: the IPv4 address in dotted form ("10.0.0.7";
// an IPv4-mapped IPv6 address counts as its IPv4 address), or for IPv6 the /64 prefix
// ("2001:db8:1:2::/64"). `bytes` is the address in network order, 4 or 16 bytes; any
// other length gives "?".
std::string ClientKey(const uint8_t* bytes, size_t size);

}  // namespace farm::http

#endif  // FARM_DAEMON_HTTP_SERVER_CONNECTION_LIMITS_H_
