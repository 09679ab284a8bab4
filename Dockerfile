# The perfwarden server image (API + dashboard). GPU nodes run the collectors from their own image.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml setup.py README.md alembic.ini ./
COPY service ./service
COPY collectors ./collectors
COPY dashboards ./dashboards
COPY migrations ./migrations
RUN pip install --no-cache-dir ".[server]"
ENV PERFWARDEN_DATA_DIR=/var/lib/perfwarden
EXPOSE 8000
CMD ["perfwarden", "serve", "--host", "0.0.0.0", "--port", "8000"]
