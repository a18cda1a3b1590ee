"""A schedule's lookup of each row's authorization is one index probe: the migration's
``(lodging_id, facilitator_id)`` index (issue 12: without it a large intermediary's
50,000-row schedule read every one of its authorizations per row)."""

from __future__ import annotations

from filing_factories import DB
from sqlalchemy import text


class TestAuthorizationIndex:
    async def test_lodging_and_facilitator_in_one_index(self, db: DB) -> None:
        async with db() as session:
            found = await session.execute(
                text("SELECT indexdef FROM pg_indexes WHERE tablename = 'authorizations' ORDER BY indexname")
            )
            definitions = list(found.scalars())
        assert (
            "CREATE INDEX ix_authorizations_lodging_id_facilitator_id ON public.authorizations "
            "USING btree (lodging_id, facilitator_id)"
        ) in definitions
