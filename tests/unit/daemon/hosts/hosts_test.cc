// farm_hosts: host checks, the generated inventory, PLAY RECAP parsing, the store's host
// rows, and HostManager running a shell script in place of ansible-playbook.
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "common/fs.h"
#include "daemon/hosts/host_manager.h"
#include "daemon/hosts/inventory.h"
#include "gtest/gtest.h"
#include "tests/support/sqlite_store_test.h"
#include "tests/support/test_util.h"

namespace farm::hosts {
namespace {

using ::farm::testing::FakeClock;
using ::farm::testing::ScopedTempDir;

TEST(ValidateHost, RefusesBadFieldsAndTokenVariables) {
  EXPECT_OK(ValidateHost("spark-01", "10.0.0.2", "gb10", {{"ansible_user", "ubuntu"}}));
  EXPECT_FALSE(ValidateHost("../etc", "h", "gb10", {}).ok());
  EXPECT_FALSE(ValidateHost("a b", "h", "gb10", {}).ok());
  EXPECT_FALSE(ValidateHost("ok", "h x", "gb10", {}).ok());
  EXPECT_FALSE(ValidateHost("ok", "h", "mac", {}).ok());
  EXPECT_FALSE(ValidateHost("ok", "h", "wsl2", {{"bad-name", "1"}}).ok());
  EXPECT_FALSE(ValidateHost("ok", "h", "wsl2", {{"farm_worker_enroll_token", "x"}}).ok());
  EXPECT_FALSE(ValidateHost("ok", "h", "wsl2", {{"v", "[unclosed"}}).ok());
}

TEST(InventoryYaml, PutsTheHostInItsKindWithTypedVarsAndNoToken) {
  auto inv =
      InventoryYaml({"local",
                     "localhost",
                     "wsl2",
                     {{"farm_skip_gpu_steps", "true"}, {"python_envs_versions", "[\"3.11\"]"}},
                     "127.0.0.1:7070"});
  ASSERT_TRUE(inv.ok()) << inv.status().ToString();
  const std::string& y = *inv;
  EXPECT_NE(y.find("workers:"), std::string::npos) << y;
  EXPECT_NE(y.find("wsl2:"), std::string::npos) << y;
  EXPECT_NE(y.find("ansible_host: \"localhost\""), std::string::npos) << y;
  EXPECT_NE(y.find("farm_worker_name: \"local\""), std::string::npos) << y;
  EXPECT_NE(y.find("farm_worker_server: \"127.0.0.1:7070\""), std::string::npos) << y;
  EXPECT_NE(y.find("farm_skip_gpu_steps: true"), std::string::npos) << y;
  EXPECT_NE(y.find("- \"3.11\""), std::string::npos) << y;  // quoted stays a string
  EXPECT_EQ(y.find("token"), std::string::npos) << y;
  EXPECT_EQ(SecretVarsYaml("abc"), "farm_worker_enroll_token: abc\n");
}

TEST(ParseRecapLine, ReadsTheHostsCountsOnly) {
  auto r = ParseRecapLine(
      "local                      : ok=41   changed=3    unreachable=0    failed=1    skipped=9",
      "local");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->ok, 41);
  EXPECT_EQ(r->changed, 3);
  EXPECT_EQ(r->failed, 1);
  EXPECT_FALSE(ParseRecapLine("other : ok=1 changed=0", "local").has_value());
  EXPECT_FALSE(ParseRecapLine("TASK [local : x]", "local").has_value());
}

class HostManagerTest : public testing::SqliteStoreTest {
 protected:
  void SetUpOnStore() override {
    ASSERT_OK(fs::MakeDirs(dir_.path() + "/playbooks"));
    ASSERT_OK(fs::WriteFileAtomic(dir_.path() + "/playbooks/workers.yml", "---\n"));
  }

  // A stand-in for ansible-playbook: records its argv, the secrets file's mode and
  // content, then prints a recap with `changed`.
  std::string FakeAnsible(int changed, int exit_code) {
    std::string path = dir_.path() + "/fake-ansible";
    std::string d = dir_.path();
    std::string script =
        "#!/bin/sh\n"
        "echo \"$@\" > " +
        d +
        "/argv\n"
        "for a in \"$@\"; do case $a in @*) f=${a#@}; stat -c %a \"$f\" > " +
        d +
        "/mode;"
        " cat \"$f\" > " +
        d +
        "/secret;; esac; done\n"
        "echo 'TASK [farm_worker : Write the enrollment token.]'\n"
        "echo 'PLAY RECAP *****'\n"
        "echo 'local : ok=12 changed=" +
        std::to_string(changed) +
        " unreachable=0 failed=0'\n"
        "exit " +
        std::to_string(exit_code) + "\n";
    EXPECT_OK(fs::WriteFileAtomic(path, script, 0755));
    return path;
  }

  std::unique_ptr<HostManager> Manager(const std::string& ansible) {
    HostOptions o;
    o.playbooks_dir = dir_.path() + "/playbooks";
    o.work_dir = dir_.path() + "/hosts";
    o.ansible_playbook = ansible;
    o.env = {{"PATH", "/usr/bin:/bin"}};
    auto m = std::make_unique<HostManager>(store_.get(), &runner_, &clock_, o,
                                           [this](const std::string&) -> Result<std::string> {
                                             ++minted_;
                                             return std::string("enroll-SECRET-value-1234");
                                           });
    m->SetServerAddress("127.0.0.1:7070");
    return m;
  }

  std::string Read(const std::string& name) {
    auto r = fs::ReadFile(dir_.path() + "/" + name);
    return r.ok() ? *r : "";
  }

  RealProcessRunner runner_;
  int minted_ = 0;
};

TEST_F(HostManagerTest, ProvisionRecordsTheRecapAndKeepsTheTokenOffTheCommandLine) {
  auto m = Manager(FakeAnsible(7, 0));
  ASSERT_OK(
      m->Add("local", "localhost", "wsl2", {{"ansible_connection", "local"}}, false).status());
  EXPECT_EQ(m->Add("local", "x", "wsl2", {}, false).status().code(), StatusCode::kAlreadyExists);
  auto done = m->Provision("local", true);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state, "provisioned") << done->error;
  EXPECT_EQ(done->changed, 7);
  EXPECT_EQ(done->ok, 12);
  EXPECT_EQ(done->runs, 1);
  EXPECT_GT(done->finished_ms, 0);
  std::string argv = Read("argv");
  EXPECT_NE(argv.find("--limit local"), std::string::npos) << argv;
  EXPECT_NE(argv.find("/playbooks/workers.yml"), std::string::npos) << argv;
  EXPECT_EQ(argv.find("SECRET"), std::string::npos) << argv;
  EXPECT_EQ(Read("mode"), "600\n");
  EXPECT_NE(Read("secret").find("enroll-SECRET-value-1234"), std::string::npos);
  EXPECT_FALSE(fs::Exists(dir_.path() + "/hosts/local/secrets.yml"));
  auto log = store_->GetHostLog("local");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("PLAY RECAP"), std::string::npos) << *log;

  // A second run reuses the host's token.
  auto again = m->Provision("local", true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->runs, 2);
  EXPECT_EQ(minted_, 1);
}

TEST_F(HostManagerTest, FailedRunIsRecordedFailed) {
  auto m = Manager(FakeAnsible(0, 2));
  ASSERT_OK(m->Add("local", "localhost", "gb10", {}, false).status());
  auto done = m->Provision("local", true);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, "failed");
  EXPECT_NE(done->error.find("exited with code 2"), std::string::npos) << done->error;
  EXPECT_EQ(m->Provision("nope", true).status().code(), StatusCode::kNotFound);
}

TEST_F(HostManagerTest, RunWithoutWaitingAndInterruptedRunsEndFailed) {
  auto m = Manager(FakeAnsible(1, 0));
  ASSERT_OK(m->Add("local", "localhost", "gb10", {}, false).status());
  auto started = m->Provision("local", false);
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(started->state, "provisioning");
  m->Stop();
  auto row = store_->GetHost("local");
  ASSERT_TRUE(row.ok());
  EXPECT_NE(row->state, "provisioning");
  // A row left provisioning by a crash is failed by the next manager.
  ASSERT_OK(store_->BeginHostRun("local", 5));
  auto next = Manager(FakeAnsible(1, 0));
  EXPECT_EQ(store_->GetHost("local")->state, "failed");
}

}  // namespace
}  // namespace farm::hosts
