# BERT on TensorFlow 2.20 with NVIDIA GPUs: CUDA 12 and cuDNN 9, the versions TensorFlow 2.20 was
# built against, and Python 3.11 (the version the tests run on). See docs/gpu_and_containers.md.
#   docker build -t bert-tf2 .
#   docker run --gpus all --rm bert-tf2 python -c \
#     "import tensorflow as tf; print(tf.config.list_physical_devices('GPU'))"
FROM nvidia/cuda:12.5.1-cudnn-runtime-ubuntu22.04

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    TF_CPP_MIN_LOG_LEVEL=1

# Ubuntu 22.04 ships Python 3.10; 3.11 comes from the deadsnakes archive.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates gpg-agent \
        software-properties-common \
    && add-apt-repository -y ppa:deadsnakes/ppa \
    && apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv \
    && rm -rf /var/lib/apt/lists/*

RUN python3.11 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

WORKDIR /opt/bert
# The dependencies first, so that a change of the code does not reinstall them. The pip
# packages of tensorflow[and-cuda] bring CUDA's libraries and ptxas (for --use_xla) in the
# versions TensorFlow expects; the base image's copies are the fallback.
COPY requirements.txt requirements-gpu.txt constraints.txt ./
RUN pip install -r requirements-gpu.txt -c constraints.txt

COPY . .
# The runners run from here: `python run_classifier.py ...`.
CMD ["python", "run_classifier.py", "--helpshort"]
