"""Due-date reminders: N days before the due date when nothing is filed, once per
lodging-period, never to a lodging that has filed."""

from __future__ import annotations

from datetime import date

from notify_factories import DB, apply, declaration, lodging, operator, scalar
from sqlalchemy import text

from notify.mail.sender import send_due
from notify.reminders.service import periods_to_remind, send_reminders
from notify.settings import NotifySettings
from servicekit.runtime import SystemClock
from taxcore.parameters import default_tree
from taxcore.periods import Period

LAW = default_tree()


async def remind(db: DB, settings: NotifySettings, on: date) -> int:
    async with db() as session, session.begin():
        return await send_reminders(session, on=on, settings=settings, law=LAW)


async def reminded(db: DB) -> list[tuple[str, str, str]]:
    async with db() as session:
        rows = await session.execute(
            text(
                "SELECT tax_account, period, status FROM emails WHERE kind = 'reminder' ORDER BY tax_account"
            )
        )
        return [tuple(r) for r in rows]  # type: ignore[misc]


class TestWindow:
    def test_pr_due_on_the_tenth(self) -> None:
        assert periods_to_remind("PR", date(2026, 12, 5), 5, law=LAW) == [
            (Period(2026, 11), date(2026, 12, 10))
        ]
        assert periods_to_remind("PR", date(2026, 12, 10), 5, law=LAW) == [
            (Period(2026, 11), date(2026, 12, 10))
        ]
        assert periods_to_remind("PR", date(2026, 12, 4), 5, law=LAW) == []
        assert periods_to_remind("PR", date(2026, 12, 11), 5, law=LAW) == []

    def test_vi_due_thirty_days_after_month_end(self) -> None:
        assert periods_to_remind("VI", date(2026, 12, 25), 5, law=LAW) == [
            (Period(2026, 11), date(2026, 12, 30))
        ]
        assert periods_to_remind("VI", date(2026, 12, 24), 5, law=LAW) == []


class TestReminders:
    async def test_once_per_lodging_period_never_to_a_filer(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        await operator(db, notify_settings, operator_id="op-r", email="r@hotel.example")
        silent = await lodging(db, notify_settings, operator_id="op-r", tax_account="PR-R-1")
        filed = await lodging(db, notify_settings, operator_id="op-r", tax_account="PR-R-2")
        by_intermediary = await lodging(db, notify_settings, operator_id="op-r", tax_account="PR-R-3")
        await lodging(
            db, notify_settings, operator_id="op-r", tax_account="PR-R-4", registered_on=date(2026, 12, 1)
        )
        await apply(db, notify_settings, declaration(filed, period="2026-11", filer_kind="operator"))
        await apply(
            db, notify_settings, declaration(by_intermediary, period="2026-11", filer_kind="facilitator")
        )

        assert await remind(db, notify_settings, date(2026, 12, 4)) == 0  # 6 days before: not yet
        assert await remind(db, notify_settings, date(2026, 12, 5)) == 2
        assert await remind(db, notify_settings, date(2026, 12, 5)) == 0  # the job ran twice
        assert await remind(db, notify_settings, date(2026, 12, 6)) == 0  # the next day of the window
        # an intermediary's schedule does not meet the operator's duty to declare (PR §28(B))
        # PR-R-4 was registered after November: it owes no November return
        assert await reminded(db) == [(silent, "2026-11", "pending"), (by_intermediary, "2026-11", "pending")]
        subject = await scalar(db, "SELECT subject FROM emails WHERE message_key = 'reminder:PR-R-1:2026-11'")
        assert (
            subject
            == "Recordatorio: la planilla de 2026-11 de Hotel El Faro vence el 10 de diciembre de 2026"
        )

    async def test_a_return_filed_before_the_reminder_leaves_cancels_it(
        self, db: DB, notify_settings: NotifySettings
    ) -> None:
        await operator(db, notify_settings, operator_id="op-r2", email="r2@hotel.example")
        account = await lodging(db, notify_settings, operator_id="op-r2", tax_account="PR-R-9")
        assert await remind(db, notify_settings, date(2026, 12, 8)) == 1
        await apply(db, notify_settings, declaration(account, period="2026-11", filer_kind="operator"))
        assert await reminded(db) == [(account, "2026-11", "cancelled")]
        assert await send_due(db, notify_settings, clock=SystemClock()) == 0

    async def test_off_when_zero_days(self, db: DB, notify_settings: NotifySettings) -> None:
        await lodging(db, notify_settings, operator_id="op-r3", tax_account="PR-R-10")
        off = notify_settings.model_copy(update={"reminder_days_before": 0})
        assert await remind(db, off, date(2026, 12, 10)) == 0
