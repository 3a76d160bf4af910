#include "tests/unit/daemon/store/postgres_server.h"

#include <glob.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "daemon/store/sql/pg_db.h"

namespace farm::testing {
namespace {

constexpr char kSuperuser[] = "farm";

PostgresServer* g_shared = nullptr;

bool Executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// The directory holding initdb and postgres: $FARM_TEST_POSTGRES_BINDIR when set (another
// server version), else pg_config --bindir (Debian's pg_config comes with libpq-dev and
// names the server's directory), else /usr/lib/postgresql/*/bin.
std::string FindBinDir() {
  if (const char* chosen = std::getenv("FARM_TEST_POSTGRES_BINDIR")) {
    std::string d(chosen);
    return Executable(d + "/initdb") && Executable(d + "/postgres") ? d : "";
  }
  std::vector<std::string> dirs;
  if (FILE* p = ::popen("pg_config --bindir 2>/dev/null", "r")) {
    char buf[512] = {};
    if (std::fgets(buf, sizeof(buf), p)) {
      std::string d(buf);
      while (!d.empty() && d.back() == '\n') d.pop_back();
      dirs.push_back(d);
    }
    ::pclose(p);
  }
  glob_t g{};
  if (::glob("/usr/lib/postgresql/*/bin", 0, nullptr, &g) == 0) {
    for (size_t i = g.gl_pathc; i > 0; --i) dirs.push_back(g.gl_pathv[i - 1]);  // newest first
  }
  ::globfree(&g);
  for (const auto& d : dirs) {
    if (Executable(d + "/initdb") && Executable(d + "/postgres")) return d;
  }
  return "";
}

// Forks `argv`, as "nobody" through setpriv when we are root. Returns the child's pid.
Result<pid_t> Spawn(std::vector<std::string> argv, const std::string& log) {
  if (::geteuid() == 0) {
    argv.insert(argv.begin(), {"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                               "--pdeathsig=TERM"});
  }
  pid_t pid = ::fork();
  if (pid < 0) return Status::Internal("fork failed");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    FILE* out = std::freopen(log.c_str(), "a", stdout);
    if (out) ::dup2(::fileno(stdout), 2);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

Status WaitExit(pid_t pid, const std::string& what, const std::string& log) {
  int status = 0;
  for (int i = 0; i < 1200; ++i) {  // 120 s
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
      return Status::Internal(what + " failed; see " + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return Status::DeadlineExceeded(what + " did not finish in 120 s; see " + log);
}

std::string SocketUrl(const std::string& dir, const std::string& db) {
  return "postgresql:///" + db + "?host=" + dir + "&user=" + kSuperuser;
}

}  // namespace

Result<std::unique_ptr<PostgresServer>> PostgresServer::Start() {
  std::string bin = FindBinDir();
  if (bin.empty()) {
    return Status::NotFound(
        "PostgreSQL server binaries (initdb, postgres) not found in "
        "$FARM_TEST_POSTGRES_BINDIR, pg_config --bindir or /usr/lib/postgresql/*/bin: install "
        "the postgresql package");
  }
  struct passwd* nobody = ::getpwnam("nobody");
  if (::geteuid() == 0 && (!nobody || !Executable("/usr/bin/setpriv"))) {
    return Status::NotFound(
        "running as root, and PostgreSQL refuses root: need the user nobody and "
        "/usr/bin/setpriv (util-linux) to run the server unprivileged");
  }
  std::unique_ptr<PostgresServer> server(new PostgresServer());
  std::string tmpl = (std::filesystem::temp_directory_path() / "farm-pg-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return Status::Internal("mkdtemp failed");
  server->dir_ = tmpl;
  if (::geteuid() == 0 && ::chown(tmpl.c_str(), nobody->pw_uid, nobody->pw_gid) != 0) {
    return Status::Internal("cannot hand " + tmpl + " to nobody");
  }
  const std::string log = tmpl + "/server.log";
  const std::string data = tmpl + "/data";
  FARM_ASSIGN_OR_RETURN(pid_t initdb,
                        Spawn({bin + "/initdb", "-D", data, "-U", kSuperuser, "--auth=trust", "-E",
                               "UTF8", "--locale=C", "--no-sync"},
                              log));
  FARM_RETURN_IF_ERROR(WaitExit(initdb, "initdb", log));
  // Durability settings off: a test database is thrown away, and fsync costs seconds.
  FARM_ASSIGN_OR_RETURN(
      server->pid_,
      Spawn({bin + "/postgres", "-D", data, "-k", tmpl, "-c", "listen_addresses=", "-c",
             "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"},
            log));
  for (int i = 0; i < 600; ++i) {  // 60 s
    if (store::OpenPgDb(SocketUrl(tmpl, "postgres")).ok()) return server;
    int status = 0;
    if (::waitpid(server->pid_, &status, WNOHANG) == server->pid_) {
      server->pid_ = -1;
      return Status::Internal("postgres exited at start; see " + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::DeadlineExceeded("postgres did not accept connections in 60 s; see " + log);
}

PostgresServer::~PostgresServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGQUIT);  // immediate shutdown: no checkpoint, the data is removed next
    int status = 0;
    bool gone = false;
    for (int i = 0; i < 300 && !gone; ++i) {  // 30 s
      gone = ::waitpid(pid_, &status, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!gone) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

Result<std::string> PostgresServer::CreateDatabase() {
  FARM_ASSIGN_OR_RETURN(auto admin, store::OpenPgDb(SocketUrl(dir_, "postgres")));
  std::string name = "farm_test_" + std::to_string(++next_db_);
  FARM_RETURN_IF_ERROR(admin->Exec("CREATE DATABASE " + name));
  return SocketUrl(dir_, name);
}

PostgresServer* SharedPostgres() { return g_shared; }
void SetSharedPostgres(PostgresServer* server) { g_shared = server; }

}  // namespace farm::testing
