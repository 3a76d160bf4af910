# Every third-party dependency, from Debian 12 packages (see common/scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(PostgreSQL REQUIRED)  # libpq, for the PostgreSQL store
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(Boost 1.81 REQUIRED COMPONENTS json url)
find_package(LibArchive REQUIRED)
# toml++ for PEP 751 lock files (pylock.toml), used header-only: Debian's shared library is
# built with exceptions, and the farm parses with them off (no binary to ship to workers).
find_path(FARM_TOMLPLUSPLUS_INCLUDE toml++/toml.h REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
find_package(ZLIB REQUIRED)  # deflate, to measure what code images add to a wheel
if(FARM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
