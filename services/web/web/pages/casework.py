"""The agency's work queues and case-work screens over assessment's APIs.

Queues: proposals awaiting a second person (maker-checker), open cases (disputes),
refunds not finished, payment plan requests not answered (``pages.plans``), and flagged
declarations. Screens: a case (review, hearing,
decision, appeal), a proposal (approve or reject), a refund (review, decide, pay) and
an abatement request (decide). Every rule stays in assessment: the pages only show why
an action is absent (the API would refuse it) and render the API's refusal when it
comes anyway, next to the form, in the person's language.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from web import people
from web.core import AgencyDep, Api, ApiDep, CsrfDep, lang_of, render
from web.forms import act
from web.i18n import N_
from web.session import Person

router = APIRouter(prefix="/agency")

#: who works cases and reviews proposals (assessment's ``case_proposer_roles`` and
#: ``case_approver_roles`` as packaged); auditors and dashboards read only
STAFF = ("agency-admin", "agency-officer")

ACTIONS: dict[str, str] = {
    "case.decide": N_("Decision on a dispute"),
    "refund.approve": N_("Refund approval"),
    "refund.pay": N_("Refund disbursement"),
    "abatement.decide": N_("Abatement"),
    "write_off.approve": N_("Write-off"),
}
OUTCOMES: dict[str, str] = {
    "sustain": N_("Sustain the notice"),
    "reduce": N_("Reduce the amounts"),
    "cancel": N_("Cancel the notice"),
}
COMPONENTS = {"tax": N_("Tax"), "impact_fee": N_("Impact fee"), "fine": N_("Fine")}
APPEAL_OUTCOMES = {"upheld": N_("Upheld"), "withdrawn": N_("Withdrawn")}
REFUND_OUTCOMES = {"approve": N_("Propose the approval"), "deny": N_("Deny")}
ABATEMENT_OUTCOMES = {"full": N_("Abate in full"), "partial": N_("Abate in part"), "deny": N_("Deny")}
REFUND_METHODS = {"ach": N_("ACH transfer"), "check": N_("Check"), "wire": N_("Wire transfer")}


def may_work(person: Person) -> bool:
    return person.role in STAFF


def subject_url(proposal: dict[str, Any]) -> str | None:
    """Where the thing a proposal decides is shown."""
    kind = str(proposal["action"]).split(".")[0]
    return {
        "case": f"/agency/cases/{proposal['subject_id']}",
        "refund": f"/agency/refunds/{proposal['subject_id']}",
        "abatement": f"/agency/abatements/{proposal['subject_id']}",
    }.get(kind)


def review_blocked(request: Request, person: Person, proposal: dict[str, Any]) -> dict[str, str | None]:
    """Why the approve and reject buttons are absent, if they are (None: the button shows).

    The same rules as assessment's ``approvals.review``: the maker is not the checker,
    only staff review, and above the threshold only an agency administrator approves.
    """
    _ = lang_of(request).gettext
    if proposal["status"] != "pending":
        done = _("This proposal was already reviewed.")
        return {"approve": done, "reject": done}
    if proposal["proposed_by"] == person.user_id:
        mine = _("You made this proposal: another person must approve or reject it (maker-checker).")
        return {"approve": mine, "reject": mine}
    if not may_work(person):
        role = _("Your role reads case work; an agency officer or administrator reviews it.")
        return {"approve": role, "reject": role}
    if proposal["admin_approval_required"] and person.role != "agency-admin":
        above = _("The amount is above the approval threshold: only an agency administrator approves it.")
        return {"approve": above, "reject": None}
    return {"approve": None, "reject": None}


#: tax accounts per registry call (the registry's limit on ``tax_account=``)
NAMES_PER_CALL = 500


async def _accounts_names(api: Api, accounts: set[str]) -> dict[str, str]:
    """Lodging names of the queues' tax accounts: one registry call per 500 accounts, all at
    once; an account the registry does not show keeps its number."""
    wanted = sorted(accounts)
    chunks = [wanted[i : i + NAMES_PER_CALL] for i in range(0, len(wanted), NAMES_PER_CALL)]
    pages = await asyncio.gather(
        *(
            api.get("registry", "/v1/lodgings", params={"tax_account": chunk, "limit": NAMES_PER_CALL})
            for chunk in chunks
        )
    )
    names = {a: a for a in wanted}
    names.update({str(x["tax_account"]): str(x["name"]) for page in pages for x in page["items"]})
    return names


@router.get("/queues")
async def queues(request: Request, person: AgencyDep, api: ApiDep) -> Response:
    proposals, cases, refunds, plan_requests, flagged = await asyncio.gather(
        api.get("assessment", "/v1/proposals", params={"status": "pending"}),
        api.get("assessment", "/v1/worklists/cases"),
        api.get("assessment", "/v1/worklists/refunds"),
        api.get("assessment", "/v1/plan-requests"),
        api.get("filing", "/v1/declarations", params={"status": "flagged", "latest": "true", "limit": 100}),
    )
    accounts = {p["tax_account"] for p in proposals} | {c["tax_account"] for c in cases}
    accounts |= {r["tax_account"] for r in refunds} | {r["tax_account"] for r in plan_requests}
    names = await _accounts_names(api, accounts)
    return render(
        request,
        "agency/queues.html",
        proposals=[{**p, "blocked": review_blocked(request, person, p)} for p in proposals],
        cases=cases,
        refunds=refunds,
        plan_requests=plan_requests,
        flagged=flagged["items"],
        names=names,
        actions=ACTIONS,
        subject_url=subject_url,
    )


# ---- cases ----------------------------------------------------------------------------


async def _case_page(
    request: Request, person: Person, api: Api, case_id: str, errors: dict[str, str], status: int = 200
) -> Response:
    case = await api.get("assessment", f"/v1/cases/{case_id}")
    notice, lodging = await asyncio.gather(
        api.get("assessment", f"/v1/notices/{case['notice_id']}"),
        api.get("registry", f"/v1/lodgings/{case['tax_account']}"),
    )
    proposal = None
    if case["pending_proposal_id"]:
        proposal = await api.get("assessment", f"/v1/proposals/{case['pending_proposal_id']}")
    await people.resolve(request, api, case, proposal)
    return render(
        request,
        "agency/case.html",
        status,
        case=case,
        notice=notice,
        lodging=lodging,
        proposal=proposal,
        may_work=may_work(person),
        outcomes=OUTCOMES,
        appeal_outcomes=APPEAL_OUTCOMES,
        components=COMPONENTS,
        errors=errors,
    )


@router.get("/cases/{case_id}")
async def case_page(request: Request, case_id: str, person: AgencyDep, api: ApiDep) -> Response:
    return await _case_page(request, person, api, case_id, {})


def _case_action(
    request: Request, person: Person, api: Api, case_id: str, path: str, body: dict[str, Any] | None
) -> Awaitable[Response]:
    return act(
        request,
        lambda: api.post("assessment", f"/v1/cases/{case_id}/{path}", body),
        partial(_case_page, request, person, api, case_id),
        f"/agency/cases/{case_id}",
    )


@router.post("/cases/{case_id}/review", dependencies=[CsrfDep])
async def case_review(request: Request, case_id: str, person: AgencyDep, api: ApiDep) -> Response:
    return await _case_action(request, person, api, case_id, "review", None)


@router.post("/cases/{case_id}/hearing", dependencies=[CsrfDep])
async def case_hearing(
    request: Request,
    case_id: str,
    person: AgencyDep,
    api: ApiDep,
    hearing_on: Annotated[str, Form()] = "",
    place: Annotated[str, Form()] = "",
    video_link: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    if not hearing_on:
        return await _case_page(request, person, api, case_id, {"hearing_on": _("Choose the day.")}, 422)
    body = {
        "hearing_on": hearing_on,
        "place": place.strip() or None,
        "video_link": video_link.strip() or None,
    }
    return await _case_action(request, person, api, case_id, "hearing", body)


@router.post("/cases/{case_id}/decision", dependencies=[CsrfDep])
async def case_decision(
    request: Request,
    case_id: str,
    person: AgencyDep,
    api: ApiDep,
    outcome: Annotated[str, Form()] = "",
    reasons: Annotated[str, Form()] = "",
    tax: Annotated[str, Form()] = "",
    impact_fee: Annotated[str, Form()] = "",
    fine: Annotated[str, Form()] = "",
) -> Response:
    _ = lang_of(request).gettext
    errors: dict[str, str] = {}
    if outcome not in OUTCOMES:
        errors["outcome"] = _("Choose the decision.")
    if not reasons.strip():
        errors["reasons"] = _("Write the reasons of the decision.")
    if errors:
        return await _case_page(request, person, api, case_id, errors, 422)
    given = {"tax": tax, "impact_fee": impact_fee, "fine": fine}
    amounts = {k: v.strip() for k, v in given.items() if v.strip()} if outcome == "reduce" else {}
    body = {"outcome": outcome, "reasons": reasons.strip(), "amounts": amounts}
    return await _case_action(request, person, api, case_id, "decision", body)


@router.post("/cases/{case_id}/appeal-resolution", dependencies=[CsrfDep])
async def case_appeal_resolution(
    request: Request,
    case_id: str,
    person: AgencyDep,
    api: ApiDep,
    outcome: Annotated[str, Form()] = "",
    reasons: Annotated[str, Form()] = "",
) -> Response:
    body = {"outcome": outcome, "reasons": reasons.strip()}
    return await _case_action(request, person, api, case_id, "appeal/resolution", body)


# ---- proposals, refunds, abatements: one object of an account, its page and its steps -


async def _subject_page(
    request: Request,
    person: Person,
    api: Api,
    kind: str,
    object_id: str,
    errors: dict[str, str],
    status: int = 200,
) -> Response:
    """The page of a proposal, refund or abatement request, with its lodging."""
    item = await api.get("assessment", f"/v1/{kind}s/{object_id}")
    lodging = await api.get("registry", f"/v1/lodgings/{item['tax_account']}")
    extra: dict[str, Any] = {}
    if kind == "proposal":
        extra = {
            "blocked": review_blocked(request, person, item),
            "action_label": ACTIONS.get(item["action"], item["action"]),
            "subject": subject_url(item),
        }
    elif kind == "refund":
        extra = {"methods": REFUND_METHODS, "outcomes": REFUND_OUTCOMES}
    else:
        extra = {"outcomes": ABATEMENT_OUTCOMES}
    await people.resolve(request, api, item)
    return render(
        request,
        f"agency/{kind}.html",
        status,
        **{kind: item},
        lodging=lodging,
        may_work=may_work(person),
        errors=errors,
        **extra,
    )


#: the steps each page posts, and the body each sends to assessment
STEPS: dict[str, dict[str, Callable[[dict[str, str]], dict[str, Any] | None]]] = {
    "proposal": {
        "approve": lambda f: {"note": f["note"] or None},
        "reject": lambda f: {"note": f["note"] or None},
    },
    "refund": {
        "review": lambda f: None,
        "decision": lambda f: {"outcome": f["outcome"], "reasons": f["reasons"]},
        "payment": lambda f: {"method": f["method"], "reference": f["reference"]},
    },
    "abatement": {
        "decision": lambda f: {
            "outcome": f["outcome"],
            "reasons": f["reasons"],
            "amount": f["amount"] or None,
        },
    },
}


def _routes(kind: str) -> None:
    """``/agency/<kind>s/{id}`` and its steps, for each kind of object in ``STEPS``."""

    async def show(request: Request, object_id: str, person: AgencyDep, api: ApiDep) -> Response:
        return await _subject_page(request, person, api, kind, object_id, {})

    async def step(
        request: Request,
        object_id: str,
        step: str,
        person: AgencyDep,
        api: ApiDep,
        note: Annotated[str, Form()] = "",
        outcome: Annotated[str, Form()] = "",
        reasons: Annotated[str, Form()] = "",
        method: Annotated[str, Form()] = "",
        reference: Annotated[str, Form()] = "",
        amount: Annotated[str, Form()] = "",
    ) -> Response:
        body_of = STEPS[kind].get(step)
        if body_of is None:
            raise StarletteHTTPException(404)
        form = {"note": note, "outcome": outcome, "reasons": reasons, "method": method}
        form |= {"reference": reference, "amount": amount}
        body = body_of({k: v.strip() for k, v in form.items()})
        path = f"/v1/{kind}s/{object_id}/{step}"
        return await act(
            request,
            lambda: api.post("assessment", path, body),
            partial(_subject_page, request, person, api, kind, object_id),
            f"/agency/{kind}s/{object_id}",
        )

    router.add_api_route(f"/{kind}s/{{object_id}}", show, methods=["GET"], name=f"{kind}_page")
    router.add_api_route(
        f"/{kind}s/{{object_id}}/{{step}}",
        step,
        methods=["POST"],
        dependencies=[CsrfDep],
        name=f"{kind}_step",
    )


for _kind in STEPS:
    _routes(_kind)
