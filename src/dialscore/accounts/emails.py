"""Users' email addresses: what one may be, and the stand-in of an admin created without one."""

from __future__ import annotations

from dialscore.kit.text import text_problem

# The length of users.email.
MAX_EMAIL_LENGTH = 320
# Every user row needs a unique email, and a client created without one (by a script that
# only wants an API key) still gets an admin. ".invalid" is reserved (RFC 2606): no mail goes
# there and nobody owns such an address, so it can never be mistaken for a person's (P94).
PLACEHOLDER_DOMAIN = "clients.dialscore.invalid"


def placeholder_email(client_id: str) -> str:
    return f"admin+{client_id}@{PLACEHOLDER_DOMAIN}"


def is_placeholder(email: str) -> bool:
    return email.endswith(f"@{PLACEHOLDER_DOMAIN}")


def shown_email(email: str) -> str | None:
    """The address as a person may see it: None for a user who has no email yet."""
    return None if is_placeholder(email) else email


def email_problem(email: str) -> str | None:
    """Why ``email`` (trimmed, lower case) cannot be a user's email; None if it can."""
    if "@" not in email:
        return "email must be an email address"
    if len(email) > MAX_EMAIL_LENGTH:
        return f"email must have at most {MAX_EMAIL_LENGTH} characters"
    problem = text_problem(email)
    return None if problem is None else f"email {problem}"


def given_email_problem(email: str) -> str | None:
    """Like ``email_problem``, for an address given for a user: one at the placeholder domain
    would make that user one without an email."""
    if is_placeholder(email):
        return f"email must be a person's address, not one at {PLACEHOLDER_DOMAIN}"
    return email_problem(email)
