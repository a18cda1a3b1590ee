"""Every query of payment plans."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ARRAY, Text, any_, bindparam, exists, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from assessment.plans.models import PaymentPlan, PlanInstallment, PlanRequest, PlanStep


async def account_plans(session: AsyncSession, tax_account: str) -> list[PaymentPlan]:
    stmt = select(PaymentPlan).where(PaymentPlan.tax_account == tax_account).order_by(PaymentPlan.seq)
    return list((await session.execute(stmt)).scalars().all())


async def has_plans(session: AsyncSession, tax_account: str) -> bool:
    stmt = select(exists().where(PaymentPlan.tax_account == tax_account))
    return bool((await session.execute(stmt)).scalar())


async def accounts_with_plans(session: AsyncSession, tax_accounts: Sequence[str]) -> set[str]:
    """Which of ``tax_accounts`` have a payment plan, in one query."""
    accounts = bindparam("accounts", list(tax_accounts), type_=ARRAY(Text()))
    stmt = select(PaymentPlan.tax_account).where(PaymentPlan.tax_account == any_(accounts)).distinct()
    return {str(a) for a in (await session.execute(stmt)).scalars()}


async def installments(session: AsyncSession, plan_ids: list[str]) -> dict[str, list[PlanInstallment]]:
    out: dict[str, list[PlanInstallment]] = {p: [] for p in plan_ids}
    if not plan_ids:
        return out
    stmt = (
        select(PlanInstallment)
        .where(PlanInstallment.plan_id.in_(plan_ids))
        .order_by(PlanInstallment.plan_id, PlanInstallment.number)
    )
    for row in (await session.execute(stmt)).scalars().all():
        out[row.plan_id].append(row)
    return out


async def steps(session: AsyncSession, subject_ids: list[str]) -> dict[str, list[PlanStep]]:
    out: dict[str, list[PlanStep]] = {s: [] for s in subject_ids}
    if not subject_ids:
        return out
    stmt = select(PlanStep).where(PlanStep.subject_id.in_(subject_ids)).order_by(PlanStep.seq)
    for row in (await session.execute(stmt)).scalars().all():
        out[row.subject_id].append(row)
    return out


async def account_requests(session: AsyncSession, tax_account: str) -> list[PlanRequest]:
    stmt = select(PlanRequest).where(PlanRequest.tax_account == tax_account).order_by(PlanRequest.seq)
    return list((await session.execute(stmt)).scalars().all())


QUEUE_LIMIT = 500  # the agency's queue shows its oldest requests, as the other work queues do


def _pending() -> Any:
    """Requests neither granted (a plan names them) nor declined."""
    granted = select(PaymentPlan.id).where(PaymentPlan.request_id == PlanRequest.id)
    declined = select(PlanStep.id).where(PlanStep.subject_id == PlanRequest.id, PlanStep.key == "declined")
    return ~granted.exists() & ~declined.exists()


async def pending_requests(session: AsyncSession) -> list[PlanRequest]:
    """The agency's queue, oldest first: at most ``QUEUE_LIMIT`` requests."""
    stmt = select(PlanRequest).where(_pending()).order_by(PlanRequest.seq).limit(QUEUE_LIMIT)
    return list((await session.execute(stmt)).scalars().all())


async def pending_request_of(session: AsyncSession, tax_account: str) -> PlanRequest | None:
    """The account's request still waiting for the agency, if any (there is at most one)."""
    stmt = select(PlanRequest).where(PlanRequest.tax_account == tax_account, _pending()).limit(1)
    return (await session.execute(stmt)).scalar_one_or_none()


async def plans_of_requests(session: AsyncSession, request_ids: Sequence[str]) -> dict[str, PaymentPlan]:
    """The plans granted on any of ``request_ids``, by request, in one query."""
    if not request_ids:
        return {}
    stmt = select(PaymentPlan).where(PaymentPlan.request_id.in_(list(request_ids)))
    return {str(p.request_id): p for p in (await session.execute(stmt)).scalars().all()}


async def plan_of_request(session: AsyncSession, request_id: str) -> PaymentPlan | None:
    stmt = select(PaymentPlan).where(PaymentPlan.request_id == request_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def open_plan_accounts(session: AsyncSession) -> list[str]:
    """Accounts with a plan neither recorded as defaulted nor as completed (a completion not
    followed by a reopening: a returned payment)."""
    later = aliased(PlanStep)
    reopened = select(later.id).where(
        later.subject_id == PlanStep.subject_id, later.step == "reopened", later.seq > PlanStep.seq
    )
    closed = select(PlanStep.id).where(
        PlanStep.subject_id == PaymentPlan.id,
        (PlanStep.step == "defaulted") | ((PlanStep.step == "completed") & ~reopened.exists()),
    )
    stmt = (
        select(PaymentPlan.tax_account).where(~closed.exists()).distinct().order_by(PaymentPlan.tax_account)
    )
    return list((await session.execute(stmt)).scalars().all())
