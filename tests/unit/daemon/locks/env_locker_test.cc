// The locks of a build's provisioned cells: one resolution per distinct environment,
// recorded by digest, the index retried, the recipe's own lock checked complete.
#include "daemon/locks/env_locker.h"

#include <functional>
#include <map>
#include <mutex>

#include "common/sha256.h"
#include "tests/support/test_util.h"

namespace farm::locks {
namespace {

// Resolves a request to one package per requirement name (version from an "==" pin, else
// 1.0), and "dep" as pip would add it; counts calls and fails as scripted.
class FakeResolver final : public lock::Resolver {
 public:
  Result<lock::EnvLock> Resolve(const lock::ResolveRequest& r) override {
    std::lock_guard lock(mu_);
    calls += 1;
    if (on_call) on_call();
    if (unavailable > 0) {
      unavailable -= 1;
      return Status::Unavailable("the index could not be read");
    }
    if (!refuse.empty()) return Status::InvalidArgument(refuse);
    lock::EnvLock out;
    out.python = r.python.substr(0, 4);
    out.platform = r.platform;
    out.index_name = r.index_name;
    out.requirements = r.requirements;
    for (std::string req : r.requirements) {
      std::string name = req.substr(0, req.find_first_of("=<>!~"));
      size_t eq = req.find("==");
      std::string version = eq == std::string::npos ? "1.0" : req.substr(eq + 2);
      if (version.ends_with(".*")) version = version.substr(0, version.size() - 2) + ".3";
      out.packages.push_back(Package(name, version));
    }
    if (add_dep) out.packages.push_back(Package("dep", "2.0"));
    return out;
  }
  static lock::LockedPackage Package(const std::string& name, const std::string& version) {
    std::string file = name + "-" + version + "-py3-none-any.whl";
    return {name, version, "", file, "https://up/" + file, Sha256Hex(name + version), 10};
  }
  std::mutex mu_;
  int calls = 0;
  int unavailable = 0;
  std::function<void()> on_call;  // a pip run's length, on the fake clock
  bool add_dep = true;
  std::string refuse;
};

class MemoryLockStore final : public store::LockStore {
 public:
  Status PutLock(const store::LockRow& row) override {
    rows.emplace(row.digest, row);
    return Status::Ok();
  }
  Result<std::optional<store::LockRow>> GetLock(const std::string& digest) override {
    auto it = rows.find(digest);
    if (it == rows.end()) return std::optional<store::LockRow>();
    return std::optional<store::LockRow>(it->second);
  }
  std::map<std::string, store::LockRow> rows;
};

farm::v1::ProvisionSpec Spec(const std::string& python, const std::string& torch,
                             const std::string& variant) {
  farm::v1::ProvisionSpec s;
  s.set_python(python);
  s.set_torch_minor(torch.substr(0, torch.rfind('.')));
  s.set_torch_version(torch);
  s.set_torch_variant(variant);
  s.set_platform("linux_x86_64");
  s.add_requirements("setuptools>=64");
  return s;
}

class EnvLockerTest : public ::testing::Test {
 protected:
  EnvLocker Make() {
    LockerOptions o;
    o.sleep = [this](int64_t ms) {
      slept.push_back(ms);
      clock.Advance(ms);
    };
    return EnvLocker(&resolver, &store, Routes(), &clock, o);
  }
  static IndexRoutes Routes() {
    return [](const std::string& variant) -> Result<IndexRoute> {
      if (variant == "cu999") return Status::FailedPrecondition("no --upstream-index cu999");
      return IndexRoute{variant, "http://farmd/upstream/pypi/" + variant + "/simple/",
                        "https://download.example/whl/" + variant + "/"};
    };
  }
  FakeResolver resolver;
  MemoryLockStore store;
  farm::testing::FakeClock clock;
  std::vector<int64_t> slept;
};

TEST_F(EnvLockerTest, ResolvesEachDistinctEnvironmentOnceAndRecordsIt) {
  // A 12-cell matrix (4 arch lists each) over 3 distinct environments.
  std::vector<farm::v1::ProvisionSpec> specs;
  for (int arch = 0; arch < 4; ++arch) {
    specs.push_back(Spec("3.12", "2.10.0", "cu128"));
    specs.push_back(Spec("3.12", "2.11.0", "cu130"));
    specs.push_back(Spec("3.13", "2.11.0", "cu130"));
  }
  EnvLocker locker = Make();
  auto locks = locker.LockAll(specs);
  ASSERT_OK(locks.status());
  EXPECT_EQ(resolver.calls, 3);
  EXPECT_EQ(locker.resolutions(), 3);
  ASSERT_EQ(locks->size(), 12u);
  EXPECT_EQ((*locks)[0].digest, (*locks)[3].digest);
  EXPECT_NE((*locks)[0].digest, (*locks)[1].digest);
  EXPECT_NE((*locks)[1].digest, (*locks)[2].digest);
  EXPECT_EQ(store.rows.size(), 3u);
  const store::LockRow& row = store.rows.at((*locks)[1].digest);
  EXPECT_EQ(row.packages, 3);  // torch, setuptools, dep
  EXPECT_EQ(lock::Digest(*lock::ParseToml(row.text)), row.digest);
  // The lock names the upstream's index, never farmd's route pip read.
  for (const lock::LockedPackage& p : (*locks)[1].lock.packages) {
    EXPECT_EQ(p.index, "https://download.example/whl/cu130/");
  }
  EXPECT_EQ((*locks)[1].lock.index_name, "cu130");
}

TEST_F(EnvLockerTest, AsksForTheCellsTorchAndItsOverrides) {
  farm::v1::ProvisionSpec s = Spec("3.12", "2.11.0", "cu130");
  (*s.mutable_torch_requirements())["2.11.0+cu130"].add_pins("triton==3.6.0");
  (*s.mutable_torch_requirements())["2.11.1+cu130"].add_pins("triton==3.6.1");
  EXPECT_EQ(Requirements(s),
            (std::vector<std::string>{"torch==2.11.0", "setuptools>=64", "triton==3.6.0"}));
  s.clear_torch_version();
  s.set_torch_newest(true);
  EXPECT_EQ(Requirements(s), (std::vector<std::string>{"torch==2.11.*", "setuptools>=64"}));
}

TEST_F(EnvLockerTest, AnUnreachableIndexIsTriedAgainThenSaidSo) {
  resolver.unavailable = 2;
  EnvLocker locker = Make();
  ASSERT_OK(locker.LockAll({Spec("3.12", "2.11.0", "cu130")}).status());
  EXPECT_EQ(resolver.calls, 3);
  EXPECT_EQ(slept, (std::vector<int64_t>{2000, 4000}));
  resolver.unavailable = 5;
  auto down = locker.LockAll({Spec("3.12", "2.11.0", "cu130")});
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(store.rows.size() == 1u);
}

TEST_F(EnvLockerTest, NoAttemptStartsThatCouldNotEndInsideTheBudget) {
  // Each pip run takes 6 s on a loaded host: after the first (6 s) and a 2 s pause, a second
  // ends at 14 s, inside the 15 s budget; a third would end at 14 + 4 + 6 = 24 s.
  resolver.unavailable = 5;
  resolver.on_call = [this] { clock.Advance(6000); };
  EnvLocker locker = Make();
  auto down = locker.LockAll({Spec("3.12", "2.11.0", "cu130")});
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(resolver.calls, 2);
  EXPECT_EQ(slept, (std::vector<int64_t>{2000}));
  // A pip run that alone outlasts the budget is not repeated.
  resolver.calls = 0;
  slept.clear();
  resolver.on_call = [this] { clock.Advance(20000); };
  EXPECT_EQ(locker.LockAll({Spec("3.12", "2.11.0", "cu130")}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ(resolver.calls, 1);
  EXPECT_TRUE(slept.empty());
}

TEST_F(EnvLockerTest, TheRecipesFailuresAreNotRetriedAndNameTheCell) {
  resolver.refuse = "no wheel satisfies sympy>=99 for Python 3.12 on linux_x86_64";
  auto r = Make().LockAll({Spec("3.12", "2.11.0", "cu130")});
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resolver.calls, 1);
  EXPECT_NE(r.status().message().find("Python 3.12, torch 2.11.0 on cu130, linux_x86_64"),
            std::string::npos)
      << r.status().message();
  EXPECT_TRUE(store.rows.empty());
  EXPECT_EQ(Make().LockAll({Spec("3.12", "2.11.0", "cu999")}).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(EnvLockerTest, TheRecipesOwnLockIsCheckedCompleteAgainstTheIndex) {
  lock::EnvLock own;
  own.packages = {FakeResolver::Package("torch", "2.11.0"),
                  FakeResolver::Package("setuptools", "80.0")};
  farm::v1::ProvisionSpec s = Spec("3.12", "2.11.0", "cu130");
  s.set_lock(lock::ToToml(own));
  auto incomplete = Make().LockAll({s});
  EXPECT_EQ(incomplete.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(incomplete.status().message().find("add dep==2.0"), std::string::npos)
      << incomplete.status().message();
  own.packages.push_back(FakeResolver::Package("dep", "2.0"));
  s.set_lock(lock::ToToml(own));
  auto complete = Make().LockAll({s});
  ASSERT_OK(complete.status());
  EXPECT_EQ((*complete)[0].lock.packages.size(), 3u);
  EXPECT_EQ((*complete)[0].lock.python, "3.12");
  EXPECT_EQ((*complete)[0].lock.index_name, "cu130");
  own.packages[0].sha256 = std::string(64, 'e');  // a torch the index does not have
  s.set_lock(lock::ToToml(own));
  auto other = Make().LockAll({s});
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("is not the file the cu130 index has"),
            std::string::npos);
}

}  // namespace
}  // namespace farm::locks
