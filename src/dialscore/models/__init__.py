"""SQLAlchemy models, one module per aggregate."""

from dialscore.kit.db import Base
from dialscore.models.accounts import ApiKey, Client, CreditLedgerEntry, Plan, User
from dialscore.models.compliance import RndQuery
from dialscore.models.enrichment import (
    ClientProviderKey,
    DirectoryCompanyDomain,
    DirectoryCompanyPage,
    DirectoryPerson,
    EnrichmentTally,
)
from dialscore.models.idempotency import IdempotencyRecord
from dialscore.models.jobs import Contact, ContactIntake, Job, RejectedRow
from dialscore.models.outbox import OutboxMessage
from dialscore.models.scoring import (
    CallHourTally,
    CallOutcome,
    CompanyLine,
    ContactNumber,
    DncImport,
    DncNumber,
    NumberBlock,
)
from dialscore.models.signin import PasswordLink, SignInFailure, WebSession
from dialscore.models.uploads import Upload
from dialscore.models.webhooks import WebhookAttempt, WebhookDelivery, WebhookSubscription

__all__ = [
    "ApiKey",
    "Base",
    "CallHourTally",
    "CallOutcome",
    "Client",
    "ClientProviderKey",
    "CompanyLine",
    "Contact",
    "ContactIntake",
    "ContactNumber",
    "CreditLedgerEntry",
    "DirectoryCompanyDomain",
    "DirectoryCompanyPage",
    "DirectoryPerson",
    "DncImport",
    "DncNumber",
    "EnrichmentTally",
    "IdempotencyRecord",
    "Job",
    "NumberBlock",
    "OutboxMessage",
    "PasswordLink",
    "Plan",
    "RejectedRow",
    "RndQuery",
    "SignInFailure",
    "Upload",
    "User",
    "WebSession",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookSubscription",
]
