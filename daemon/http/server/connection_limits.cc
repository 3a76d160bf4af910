#include "daemon/http/server/connection_limits.h"

#include <algorithm>
#include <cstdio>

namespace farm::http {

ConnectionLimits::ConnectionLimits(int max_total, int max_per_address)
    : max_total_(std::max(1, max_total)), max_per_address_(std::max(1, max_per_address)) {}

ConnectionLimits::Slot ConnectionLimits::Admit(const std::string& client_key) {
  std::lock_guard lock(mu_);
  auto it = by_key_.find(client_key);
  if (it != by_key_.end() && it->second >= max_per_address_) {
    return Slot(nullptr, "", Admission::kAddressFull);
  }
  if (total_ >= max_total_) return Slot(nullptr, "", Admission::kServerFull);
  ++total_;
  ++by_key_[client_key];
  return Slot(this, client_key, Admission::kAdmitted);
}

void ConnectionLimits::Release(const std::string& key) {
  std::lock_guard lock(mu_);
  --total_;
  auto it = by_key_.find(key);
  if (it != by_key_.end() && --it->second <= 0) by_key_.erase(it);
}

int ConnectionLimits::total() const {
  std::lock_guard lock(mu_);
  return total_;
}

int ConnectionLimits::of(const std::string& client_key) const {
  std::lock_guard lock(mu_);
  auto it = by_key_.find(client_key);
  return it == by_key_.end() ? 0 : it->second;
}

ConnectionLimits::Slot::Slot(Slot&& other) noexcept
    : limits_(other.limits_), key_(std::move(other.key_)), admission_(other.admission_) {
  other.limits_ = nullptr;
}

ConnectionLimits::Slot& ConnectionLimits::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    limits_ = other.limits_;
    key_ = std::move(other.key_);
    admission_ = other.admission_;
    other.limits_ = nullptr;
  }
  return *this;
}

ConnectionLimits::Slot::~Slot() { Release(); }

void ConnectionLimits::Slot::Release() {
  if (limits_ != nullptr) limits_->Release(key_);
  limits_ = nullptr;
}

std::string ClientKey(const uint8_t* bytes, size_t size) {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (size == 16 && std::equal(kMapped, kMapped + 12, bytes)) {
    bytes += 12;
    size = 4;
  }
  char text[64];
  if (size == 4) {
    std::snprintf(text, sizeof(text), "%u.%u.%u.%u", bytes[0], bytes[1], bytes[2], bytes[3]);
    return text;
  }
  if (size != 16) return "?";
  // The first four 16-bit groups: one host's /64, whatever its interface identifiers.
  std::snprintf(text, sizeof(text), "%x:%x:%x:%x::/64", bytes[0] << 8 | bytes[1],
                bytes[2] << 8 | bytes[3], bytes[4] << 8 | bytes[5], bytes[6] << 8 | bytes[7]);
  return text;
}

}  // namespace farm::http
