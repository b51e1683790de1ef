"""Signing in to the web app: passwords, sessions, throttled failures, password links."""
