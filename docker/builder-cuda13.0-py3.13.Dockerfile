# Build image for jobs that need CUDA 13.0 (torch cu130, sm_121a for GB10) and CPython 3.13.
# Ubuntu 24.04 lacks Python 3.13: it comes from the deadsnakes PPA.
#   docker build -f docker/builder-cuda13.0-py3.13.Dockerfile -t farm/builder:cuda13.0-py3.13 docker
FROM nvidia/cuda:13.0.1-devel-ubuntu24.04

ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common gpg-agent \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      python3.13 python3.13-dev python3.13-venv \
      git ninja-build ccache ca-certificates patchelf \
 && apt-get purge -y --auto-remove software-properties-common gpg-agent \
 && rm -rf /var/lib/apt/lists/* \
 && python3.13 -m venv /opt/venv \
 && /opt/venv/bin/python -m pip --version
ENV CUDA_HOME=/usr/local/cuda-13.0 \
    TRITON_PTXAS_PATH=/usr/local/cuda-13.0/bin/ptxas \
    PATH=/opt/venv/bin:/usr/local/cuda-13.0/bin:${PATH} \
    CCACHE_DIR=/ccache \
    FARM_BUILDER_CUDA=13.0 \
    FARM_BUILDER_PYTHON=3.13
WORKDIR /work
CMD ["python", "--version"]
