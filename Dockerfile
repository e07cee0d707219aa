# citewell with the PostgreSQL store and the S3-compatible blob store, for compose.yaml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir ".[postgresql,s3]" && useradd --create-home --uid 10001 citewell
USER citewell
WORKDIR /home/citewell
EXPOSE 8000
CMD ["citewell", "serve", "--host", "0.0.0.0", "--port", "8000"]
