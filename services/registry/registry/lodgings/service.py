"""Lodging use-cases: registration, changes, status history, compliance."""

from __future__ import annotations

from datetime import date

from sqlalchemy.ext.asyncio import AsyncSession

from registry.accounts import format_account
from registry.bonds import repository as bonds
from registry.lodgings import repository
from registry.lodgings.schemas import AttributeChange, LodgingCreate, LodgingUpdate, StatusChange
from registry.models import Lodging, LodgingAttribute, LodgingStatus, Operator
from servicekit.errors import Conflict, ValidationFailed
from servicekit.outbox import emit
from taxcore.errors import TaxcoreError
from taxcore.events import registry as ev
from taxcore.jurisdictions import has_casino_rate, known_jurisdictions, lodging_classes
from taxcore.parameters import ParameterTree, ParameterValue


def bond_requirement(jurisdiction: str, on: date, *, law: ParameterTree) -> ParameterValue | None:
    """taxcore's ``bonds.required`` in force on ``on`` (PR §27: yes; VI: none), or None where the
    jurisdiction's parameters say nothing about bonds on that day (then none is required)."""
    tree = law
    if not tree.has(jurisdiction, "bonds.required"):
        return None
    try:
        return tree.get(jurisdiction, "bonds.required", on)
    except TaxcoreError:
        return None


def bond_draw_citation(jurisdiction: str, on: date, *, law: ParameterTree) -> str:
    """``<JUR> <section>`` of a draw on the bond (taxcore ``bonds.draw_section``, PR §33), or ""."""
    tree = law
    if not tree.has(jurisdiction, "bonds.draw_section"):
        return ""
    try:
        return f"{jurisdiction} {tree.value(jurisdiction, 'bonds.draw_section', on)}"
    except TaxcoreError:
        return ""


def current_status(lodging: Lodging, on: date) -> str:
    return ev.status_on(((s.effective_from, s.status) for s in lodging.statuses), on)


def snapshot(lodging: Lodging) -> dict[str, object]:
    return {
        "lodging_id": lodging.id,
        "tax_account": lodging.tax_account,
        "jurisdiction": lodging.jurisdiction,
        "lodging_class": lodging.lodging_class,
        "casino": lodging.casino,
        "name": lodging.name,
        "municipality": lodging.municipality,
        "room_count": lodging.room_count,
        "operator_id": lodging.operator_id,
        "registered_on": lodging.registered_on,
        "address": {k: lodging.address.get(k) for k in ("line1", "line2", "municipality", "postal_code")},
        "preferred_language": lodging.preferred_language,
        "statuses": [{"status": s.status, "effective_from": s.effective_from} for s in lodging.statuses],
        "attributes": [
            {"effective_from": a.effective_from, "lodging_class": a.lodging_class, "casino": a.casino}
            for a in lodging.attributes
        ],
    }


def _check_class(
    jurisdiction: str, lodging_class: str, on: date, *, casino: bool, law: ParameterTree
) -> None:
    try:
        allowed = lodging_classes(jurisdiction, on, parameters=law)
    except TaxcoreError as exc:
        raise ValidationFailed.on("jurisdiction", exc.message) from exc
    if lodging_class not in allowed:
        raise ValidationFailed.on(
            "lodging_class",
            f"{lodging_class!r} is not a lodging class of {jurisdiction}; one of {sorted(allowed)}",
        )
    if casino and not has_casino_rate(jurisdiction, parameters=law):
        where = [j for j in known_jurisdictions(parameters=law) if has_casino_rate(j, parameters=law)]
        raise ValidationFailed.on(
            "casino",
            f"a casino licence changes the rate only where the law sets a casino rate "
            f"(rates.casino: {', '.join(where) or 'none'}); {jurisdiction} has none",
        )


async def register(session: AsyncSession, *, data: LodgingCreate, law: ParameterTree) -> Lodging:
    _check_class(data.jurisdiction, data.lodging_class, data.registered_on, casino=data.casino, law=law)
    if await session.get(Operator, data.operator_id) is None:
        raise ValidationFailed.on("operator_id", "no operator with this id")
    serial = await repository.next_serial(session, data.jurisdiction)
    lodging = Lodging(
        tax_account=format_account(data.jurisdiction, serial),
        jurisdiction=data.jurisdiction,
        lodging_class=data.lodging_class,
        casino=data.casino,
        name=data.name,
        address=data.address.model_dump(),
        municipality=data.address.municipality,
        room_count=data.room_count,
        operator_id=data.operator_id,
        registered_on=data.registered_on,
        preferred_language=data.preferred_language,
        statuses=[],
        attributes=[],
    )
    session.add(lodging)
    await session.flush()
    repository.add_status(
        session,
        lodging,
        LodgingStatus(
            lodging_id=lodging.id, status="active", effective_from=data.registered_on, reason="registration"
        ),
    )
    repository.add_attribute(
        session,
        lodging,
        LodgingAttribute(
            lodging_id=lodging.id,
            effective_from=data.registered_on,
            lodging_class=data.lodging_class,
            casino=data.casino,
            reason="registration",
        ),
    )
    await session.flush()
    await emit(session, ev.LodgingRegistered.model_validate(snapshot(lodging)), key=lodging.tax_account)
    return lodging


async def update(session: AsyncSession, *, lodging: Lodging, data: LodgingUpdate) -> Lodging:
    changes = data.model_dump(exclude_unset=True)
    if not changes:
        raise ValidationFailed.on("body", "no field to change")
    for field in ("name", "room_count", "preferred_language"):
        if field in changes and changes[field] is not None:
            setattr(lodging, field, changes[field])
    if data.address is not None:
        lodging.address = data.address.model_dump()
        lodging.municipality = data.address.municipality
    await session.flush()
    await emit(session, ev.LodgingUpdated.model_validate(snapshot(lodging)), key=lodging.tax_account)
    return lodging


async def change_status(session: AsyncSession, *, lodging: Lodging, data: StatusChange) -> Lodging:
    if data.effective_from < lodging.registered_on:
        raise ValidationFailed.on("effective_from", "is before the lodging's registration date")
    latest = lodging.statuses[-1] if lodging.statuses else None
    if latest is not None and data.effective_from < latest.effective_from:
        raise Conflict(
            f"status history is append-only: effective_from must be on or after "
            f"{latest.effective_from.isoformat()}",
            errors=[{"pointer": "#/body/effective_from", "detail": "before the latest status"}],
        )
    if latest is not None and latest.status == data.status:
        raise Conflict(
            f"the lodging is already {data.status}",
            errors=[{"pointer": "#/body/status", "detail": "unchanged"}],
        )
    repository.add_status(
        session,
        lodging,
        LodgingStatus(
            lodging_id=lodging.id, status=data.status, effective_from=data.effective_from, reason=data.reason
        ),
    )
    await session.flush()
    await emit(session, ev.LodgingStatusChanged.model_validate(snapshot(lodging)), key=lodging.tax_account)
    return lodging


async def change_attributes(
    session: AsyncSession, *, lodging: Lodging, data: AttributeChange, actor: str, law: ParameterTree
) -> Lodging:
    """Append a class / casino-licence entry in force from ``data.effective_from``.

    Append-only like the status history. A change takes effect from a period's first day:
    a monthly return applies one rate (PR §28(B), VI §54(f)), the one "for the period of
    occupancy" (PR §2(16)), so earlier periods keep the values they were computed with.
    """
    if data.lodging_class is None and data.casino is None:
        raise ValidationFailed.on("body", "give lodging_class, casino or both")
    on = data.effective_from
    if on.day != 1:
        raise ValidationFailed.on(
            "effective_from", "a class or casino change takes effect from the first day of a period"
        )
    if on < lodging.registered_on:
        raise ValidationFailed.on("effective_from", "is before the lodging's registration date")
    latest = lodging.attributes[-1] if lodging.attributes else None
    if latest is not None and on <= latest.effective_from:
        raise Conflict(
            f"attribute history is append-only: effective_from must be after "
            f"{latest.effective_from.isoformat()}",
            errors=[{"pointer": "#/body/effective_from", "detail": "on or before the latest change"}],
        )
    new_class = data.lodging_class if data.lodging_class is not None else lodging.lodging_class
    new_casino = data.casino if data.casino is not None else lodging.casino
    if (new_class, new_casino) == (lodging.lodging_class, lodging.casino):
        raise Conflict(
            "the lodging already has this class and casino licence",
            errors=[{"pointer": "#/body", "detail": "unchanged"}],
        )
    _check_class(lodging.jurisdiction, new_class, on, casino=new_casino, law=law)
    repository.add_attribute(
        session,
        lodging,
        LodgingAttribute(
            lodging_id=lodging.id,
            effective_from=on,
            lodging_class=new_class,
            casino=new_casino,
            reason=data.reason,
            recorded_by=actor,
        ),
    )
    lodging.lodging_class, lodging.casino = new_class, new_casino
    await session.flush()
    await emit(
        session, ev.LodgingAttributesChanged.model_validate(snapshot(lodging)), key=lodging.tax_account
    )
    return lodging


async def compliance(
    session: AsyncSession, *, lodging: Lodging, on: date, law: ParameterTree
) -> dict[str, object]:
    """A lodging that must keep a bond (``bonds.required``, PR §27(B), (D)) and has no valid one on
    ``on`` is non-compliant."""
    reasons: list[str] = []
    requirement = bond_requirement(lodging.jurisdiction, on, law=law)
    required = requirement is not None and requirement.value is True
    bond = await bonds.active_overlapping(session, lodging.id, on, on)
    if required and bond is None and requirement is not None:
        reasons.append(f"no valid bond on this date ({lodging.jurisdiction} {requirement.section})")
    if bond is not None and sum((d.amount for d in bond.draws), start=bond.amount * 0) >= bond.amount:
        draw = bond_draw_citation(lodging.jurisdiction, on, law=law)
        reasons.append("the bond is exhausted by draws" + (f" ({draw})" if draw else ""))
    status = current_status(lodging, on)
    if status != "active":
        reasons.append(f"the lodging is {status}")
    return {
        "lodging_id": lodging.id,
        "tax_account": lodging.tax_account,
        "as_of": on,
        "compliant": not reasons,
        "bond_required": required,
        "valid_bond_id": bond.id if bond else None,
        "reasons": reasons,
    }
