"""The events a subscription's URL receives, as the document describes them (its OpenAPI
``webhooks``): their envelopes, their payloads and the headers that come with them."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field, NonNegativeFloat, NonNegativeInt

from dialscore.jobs.examples import CONTACT_SCORED_EVENT, JOB_COMPLETED_EVENT
from dialscore.jobs.schemas import ContactOut, JobType
from dialscore.kit.envelope import Timestamp, Uuid
from dialscore.kit.openapi import request_example
from dialscore.webhooks.examples import DISABLED_EVENT_SENT, TEST_EVENT_SENT
from dialscore.webhooks.receiving import (
    ENVELOPE_ID,
    ENVELOPE_TIMESTAMP,
    RECEIVED,
    RECEIVER_ANSWERS,
    SignatureHeader,
    StandardHeaders,
    UserAgentHeader,
    WebhookDisabledEvent,
    WebhookTestEvent,
)
from dialscore.webhooks.schemas import CONTACT_SCORED, JOB_COMPLETED, TEST_EVENT, WEBHOOK_DISABLED


class EventJob(BaseModel):
    id: Uuid | None = Field(description="The job that scored the contact; null for legacy events")
    type: JobType | None = Field(description="Route handling by it; null for legacy events")


class ContactScoredPayload(BaseModel):
    contact: ContactOut = Field(description="The scored contact, every field (P13)")
    job: EventJob


class ContactScoredEvent(BaseModel):
    """One scored contact: one event per contact of a job, before the job's job.completed."""

    payload: ContactScoredPayload
    eventType: Literal["job.contact.scored"]
    timestamp: int = Field(description=ENVELOPE_TIMESTAMP)
    apiVersion: Literal["v2"]
    id: Uuid = Field(description=ENVELOPE_ID)


class JobCompletedPayload(BaseModel):
    jobId: Uuid
    jobType: JobType
    jobName: str
    jobStatus: Literal["Finalized", "Not Enriched"]
    modifiedAt: Timestamp = Field(description="When the job reached its terminal state")
    # Whole amounts stay integers on the wire, as the job's own creditsRefunded is written.
    creditsRefunded: NonNegativeInt | NonNegativeFloat = Field(
        description="Extension (P208): the credits given back when the job finished, as the "
        "job's own creditsRefunded (P202, P204); 0 when none",
    )


class JobCompletedEvent(BaseModel):
    """A job reached its terminal state; no contact data."""

    payload: JobCompletedPayload
    eventType: Literal["job.completed"]
    timestamp: int = Field(description=ENVELOPE_TIMESTAMP)
    apiVersion: Literal["v2"]
    id: Uuid = Field(description=ENVELOPE_ID)


def document_events(webhooks: APIRouter) -> None:
    """Describes the events in ``webhooks`` (the application's ``webhooks`` router): what the
    service POSTs to a subscription's URL. Nothing is served by these routes."""

    @webhooks.post(
        CONTACT_SCORED,
        operation_id="job_contact_scored",
        response_class=Response,
        response_description=RECEIVED,
        responses=RECEIVER_ANSWERS,
        openapi_extra=request_example(CONTACT_SCORED_EVENT),
        summary="A contact of one of your jobs is scored",
    )
    def job_contact_scored(
        body: ContactScoredEvent,
        signature: SignatureHeader,
        user_agent: UserAgentHeader,
        standard: StandardHeaders,
    ) -> None:
        """Sent once per scored contact of the subscription owner's jobs, whatever their
        source (D21), to every active subscription listening to it. The contact carries
        every field of the Contact resource. A retry carries the same envelope `id` and the
        same bytes (D22): skip an `id` already processed. Missed one? Read the job's contacts
        with `GET /api/public/v2/jobs/{jobId}/contacts`."""

    @webhooks.post(
        JOB_COMPLETED,
        operation_id="job_completed",
        response_class=Response,
        response_description=RECEIVED,
        responses=RECEIVER_ANSWERS,
        openapi_extra=request_example(JOB_COMPLETED_EVENT),
        summary="A job reached its terminal state",
    )
    def job_completed(
        body: JobCompletedEvent,
        signature: SignatureHeader,
        user_agent: UserAgentHeader,
        standard: StandardHeaders,
    ) -> None:
        """Sent once per job when it becomes `Finalized` (every accepted contact scored) or
        `Not Enriched` (enrichment rejected every contact), after every `job.contact.scored`
        of the job to the same subscription was delivered or failed for good (P18)."""

    @webhooks.post(
        TEST_EVENT,
        operation_id="webhook_test",
        response_class=Response,
        response_description=RECEIVED,
        responses=RECEIVER_ANSWERS,
        openapi_extra=request_example(TEST_EVENT_SENT),
        summary="A test event you asked for",
    )
    def webhook_test(
        body: WebhookTestEvent,
        signature: SignatureHeader,
        user_agent: UserAgentHeader,
        standard: StandardHeaders,
    ) -> None:
        """Sent by `POST /api/public/v2/webhooks/{id}/test`, signed like every event, so that
        a receiver can be checked before real events arrive (P21)."""

    @webhooks.post(
        WEBHOOK_DISABLED,
        operation_id="webhook_disabled",
        response_class=Response,
        response_description=RECEIVED,
        responses=RECEIVER_ANSWERS,
        openapi_extra=request_example(DISABLED_EVENT_SENT),
        summary="Another of your webhooks was turned off",
    )
    def webhook_disabled(
        body: WebhookDisabledEvent,
        signature: SignatureHeader,
        user_agent: UserAgentHeader,
        standard: StandardHeaders,
    ) -> None:
        """Extension (P160). Sent once when one of the owner's subscriptions is turned off
        because every attempt to it failed for `DIALSCORE_WEBHOOK_DISABLE_AFTER_SECONDS` (5
        days by default) after its last success: it is `inactive`, with `disabledAt` and
        `disabledReason`. Goes to the owner's other active subscriptions listening to it.
        Its pending deliveries are kept: activate it with
        `POST /api/public/v2/webhooks/{id}/active` once its receiver answers again."""
