# citewell with the PostgreSQL store and the S3-compatible blob store, for compose.yaml.
# BASE: any Debian-like image with python3 (3.11 or later) and its venv module; the offline
# build of deploy/offline/ passes one made from Debian's packages.
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN python3 -m venv /opt/venv && pip install --no-cache-dir ".[postgresql,s3]" \
 && useradd --create-home --uid 10001 citewell
USER citewell
WORKDIR /home/citewell
EXPOSE 8000
CMD ["citewell", "serve", "--host", "0.0.0.0", "--port", "8000"]
