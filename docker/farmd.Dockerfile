# farmd (coordinator) and farmctl. Build from the repository root:
#   docker build -f docker/farmd.Dockerfile -t farm/farmd:dev .
# Stage 1 compiles with Debian 12's packages; stage 2 holds the binaries and exactly the
# runtime libraries they load (computed by runtime-packages.sh), plus sqlite3 for backups.
ARG DEBIAN_IMAGE=debian:12.12-slim

FROM ${DEBIAN_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config git ca-certificates \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libboost1.81-all-dev libboost-json1.81-dev libboost-url1.81-dev \
      libcurl4-openssl-dev libsqlite3-dev libspdlog-dev libyaml-cpp-dev libssl-dev \
      libarchive-dev libzstd-dev liblz4-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /tmp/build -DCMAKE_BUILD_TYPE=Release -DFARM_BUILD_TESTS=OFF \
 && cmake --build /tmp/build --target farmd farmctl -j"$(nproc)" \
 && install -D -m 0755 /tmp/build/daemon/farmd /out/usr/local/bin/farmd \
 && install -D -m 0755 /tmp/build/cli/farmctl /out/usr/local/bin/farmctl \
 && docker/runtime-packages.sh /out/usr/local/bin/farmd /out/usr/local/bin/farmctl > /out/runtime-packages.txt

FROM ${DEBIAN_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends sqlite3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && useradd --system --uid 10001 --home-dir /var/lib/farmd --shell /usr/sbin/nologin farmd \
 && install -d -o farmd -g farmd -m 0700 /var/lib/farmd
COPY --from=build /out/usr/local/bin/ /usr/local/bin/
USER farmd
VOLUME ["/var/lib/farmd"]
EXPOSE 7070 8080
# Publishing secrets arrive as a mounted 0600 file (--secrets-file), never through ENV.
ENTRYPOINT ["/usr/local/bin/farmd"]
CMD ["--data-dir", "/var/lib/farmd", "--listen", "0.0.0.0:7070", "--ready-file", "/var/lib/farmd/ready", "--log-json"]
