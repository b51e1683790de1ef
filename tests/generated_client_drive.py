"""Drives the service with the client generated from its own /openapi.json (the package
``dialscore_client``), as an integration engineer would: score contacts, poll the job, read its
contacts, create and list a webhook subscription, read the quota and the credits. Type-checked
with mypy --strict before it runs (tests/test_generated_client.py); prints what it saw as one
JSON object.

Usage: python generated_client_drive.py BASE_URL API_KEY RECEIVER_URL"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TypeVar

import httpx
from dialscore_client import AuthenticatedClient
from dialscore_client.api.account import get_credits
from dialscore_client.api.contacts import score_contacts
from dialscore_client.api.jobs import get_job, get_job_contacts
from dialscore_client.api.rate_limits import get_quota
from dialscore_client.api.webhooks import create_webhook, list_webhooks
from dialscore_client.models import (
    ContactInput,
    ContactsResponse,
    CreditsResponse,
    EventType,
    JobResponse,
    JobStatus,
    PhoneStatus,
    QuotaResponse,
    ScoringResponse,
    ScoringType,
    SubmissionRequest,
    SubscriptionCreate,
    SubscriptionCreatedResponse,
    SubscriptionListResponse,
)
from dialscore_client.types import Unset

T = TypeVar("T")
TERMINAL = (JobStatus.FINALIZED, JobStatus.NOT_ENRICHED)
POLLS = 150
POLL_SECONDS = 0.2


def expect(answer: object, kind: type[T], call: str) -> T:
    """The answer of a call as its success model; anything else ends the run, said."""
    if not isinstance(answer, kind):
        raise SystemExit(f"{call} answered {answer!r}")
    return answer


def drive(client: AuthenticatedClient, receiver_url: str) -> dict[str, object]:
    request = SubmissionRequest(
        contacts=[
            ContactInput(
                first_name="Dana",
                last_name="Whitfield",
                company_account="Northwind Logistics",
                phone="+1 415 867 2671",
                phone_type="mobile",
                phone2="(212) 736-5000",
                phone_2_type="direct",
            ),
            ContactInput(first_name="", last_name="Okafor", phone="+44 20 7946 0958"),
        ],
        scoring_type=ScoringType.LIGHTNING,
        name="generated client",
    )
    answer = score_contacts.sync(client=client, body=request, idempotency_key="drive-1")
    submitted = expect(answer, ScoringResponse, "score_contacts")
    job_id = submitted.data.job_id
    if job_id is None or submitted.error is None:
        raise SystemExit(f"score_contacts accepted nothing or rejected nothing: {submitted!r}")
    rejected = [record.rejected_reason for record in submitted.error.records]

    for _ in range(POLLS):
        job = expect(get_job.sync(job_id, client=client), JobResponse, "get_job").data
        if job.status in TERMINAL:
            break
        time.sleep(POLL_SECONDS)
    else:
        raise SystemExit(f"job {job_id} did not finish in {POLLS * POLL_SECONDS} s")

    page = expect(
        get_job_contacts.sync(job_id, client=client, limit=10),
        ContactsResponse,
        "get_job_contacts",
    ).data
    contact = page.contacts[0]
    statuses: list[PhoneStatus | None] = [phone.status for phone in contact.phones]
    rates = [
        None if isinstance(phone.connect_rate, Unset) else phone.connect_rate
        for phone in contact.phones
    ]

    subscription = SubscriptionCreate(
        name="CRM sync",
        url=receiver_url,
        event_types=[EventType.JOB_CONTACT_SCORED, EventType.JOB_COMPLETED],
    )
    created = expect(
        create_webhook.sync(client=client, body=subscription),
        SubscriptionCreatedResponse,
        "create_webhook",
    ).data
    listed = expect(list_webhooks.sync(client=client), SubscriptionListResponse, "list_webhooks")
    quota = expect(get_quota.sync(client=client), QuotaResponse, "get_quota").data
    credits = expect(get_credits.sync(client=client), CreditsResponse, "get_credits").data

    # Keys the answers carried that the document does not declare: none, if it is complete.
    models: list[Any] = [
        submitted,
        submitted.data,
        submitted.credits_,
        submitted.error,
        *submitted.error.records,
        job,
        page.pagination,
        contact,
        *contact.phones,
        contact.best_phone,
        created,
        *listed.data.webhooks,
        quota,
        quota.day,
        credits,
    ]
    undeclared = sorted({key for model in models if model for key in model.additional_keys})

    return {
        "undeclared": undeclared,
        "jobId": str(job_id),
        "rejected": rejected,
        "charged": submitted.credits_.credits_charged,
        "status": job.status.value,
        "jobType": job.job_type.value,
        # A timestamp read as an aware date-time.
        "createdAt": job.created_at.isoformat(),
        "contacts": page.pagination.total_count,
        "contactId": str(contact.id),
        "leadStatus": contact.lead_status.value,
        "phones": [status.value if status is not None else None for status in statuses],
        "connectRates": rates,
        "bestPhone": None if contact.best_phone is None else contact.best_phone.number,
        "webhookId": str(created.id),
        "secret": created.secret,
        "webhookStatus": created.status.value,
        "listed": [str(webhook.id) for webhook in listed.data.webhooks],
        "quotaDayRemaining": quota.day.remaining,
        "credits": credits.credits_,
    }


def main() -> None:
    base_url, api_key, receiver_url = sys.argv[1:4]
    client = AuthenticatedClient(
        base_url=base_url,
        token=api_key,
        raise_on_unexpected_status=True,
        timeout=httpx.Timeout(30.0),
    )
    with client:
        print(json.dumps(drive(client, receiver_url)))


if __name__ == "__main__":
    main()
