"""The web app under /app: server-rendered pages on the same services as the API."""
