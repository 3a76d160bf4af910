# Build image for jobs that need CUDA 12.8 (torch cu128, sm_120) and CPython 3.12.
# Ubuntu 24.04 ships Python 3.12, so the interpreter comes from the distribution.
#   docker build -f docker/builder-cuda12.8-py3.12.Dockerfile -t farm/builder:cuda12.8-py3.12 docker
FROM nvidia/cuda:12.8.1-devel-ubuntu24.04

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      python3.12 python3.12-dev python3.12-venv \
      git ninja-build ccache ca-certificates patchelf \
 && rm -rf /var/lib/apt/lists/* \
 && python3.12 -m venv /opt/venv \
 && /opt/venv/bin/python -m pip --version
ENV CUDA_HOME=/usr/local/cuda-12.8 \
    TRITON_PTXAS_PATH=/usr/local/cuda-12.8/bin/ptxas \
    PATH=/opt/venv/bin:/usr/local/cuda-12.8/bin:${PATH} \
    CCACHE_DIR=/ccache \
    FARM_BUILDER_CUDA=12.8 \
    FARM_BUILDER_PYTHON=3.12
WORKDIR /work
CMD ["python", "--version"]
