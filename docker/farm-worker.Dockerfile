# farm-worker on a CUDA toolkit image, for running a worker in a container (compose.yml).
# Build from the repository root:
#   docker build -f docker/farm-worker.Dockerfile -t farm/farm-worker:dev .
# Stage 1 compiles with Debian 12's packages and bundles the libraries the binary loads
# (bundle-libs.sh sets its RPATH), so stage 2 can be the Ubuntu-based CUDA image with its own
# libraries untouched. Stage 2 holds the toolkit, Python and the build tools builds need.
ARG DEBIAN_IMAGE=debian:12.12-slim
ARG CUDA_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04

FROM ${DEBIAN_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config git ca-certificates patchelf \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libboost1.81-all-dev libboost-json1.81-dev libboost-url1.81-dev \
      libcurl4-openssl-dev libsqlite3-dev libspdlog-dev libyaml-cpp-dev libssl-dev \
      libarchive-dev libzstd-dev liblz4-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /tmp/build -DCMAKE_BUILD_TYPE=Release -DFARM_BUILD_TESTS=OFF \
 && cmake --build /tmp/build --target farm-worker -j"$(nproc)" \
 && docker/bundle-libs.sh /out/opt/farm /tmp/build/worker/farm-worker

FROM ${CUDA_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3 python3-dev python3-venv python3-pip git ninja-build ccache ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --create-home --home-dir /var/lib/farm-worker \
      --shell /usr/sbin/nologin farm-worker \
 && install -d -o farm-worker -g farm-worker -m 0750 /var/lib/farm-worker/work
COPY --from=build /out/opt/farm/ /opt/farm/
ENV CUDA_HOME=/usr/local/cuda \
    TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas \
    CCACHE_DIR=/var/lib/farm-worker/ccache
USER farm-worker
WORKDIR /var/lib/farm-worker
# The enrollment token is a mounted 0600 file (--enroll-token-file), never an ENV value.
ENTRYPOINT ["/opt/farm/bin/farm-worker", "--state-dir", "/var/lib/farm-worker", "--work-dir", "/var/lib/farm-worker/work", "--python", "/usr/bin/python3"]
