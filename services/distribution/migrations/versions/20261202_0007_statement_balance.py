"""the ledger's balance checked once per statement instead of once per row at COMMIT

Every journal entry is written with its lines in one statement (``ledger.repository``), so
the checks run when that statement ends: the entries it inserted have at least two lines
summing to zero, and the lines it inserted sum to zero for each entry they belong to. The
two together keep "every entry balances" true after every statement (a stricter rule than
the deferred row triggers they replace, which allowed an unbalanced entry until COMMIT), and
cost two set-based queries per statement instead of one query per row: a batch of 200
collections fired 600 row triggers at COMMIT.

Revision ID: 0007_statement_balance
Revises: 0006_session_revocations
"""

from alembic import op

revision: str = "0007_statement_balance"
down_revision: str | None = "0006_session_revocations"
branch_labels = None
depends_on = None

CHECK_NEW_ENTRIES = """
CREATE FUNCTION check_new_entries_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT e.id, x.lines, x.total INTO bad
      FROM new_entries e
      CROSS JOIN LATERAL (
          SELECT count(*) AS lines, coalesce(sum(l.amount), 0) AS total
            FROM journal_lines l WHERE l.entry_id = e.id
      ) x
     WHERE x.lines < 2 OR x.total <> 0
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal entry % does not balance: % lines summing to %', bad.id, bad.lines, bad.total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$
"""

CHECK_NEW_LINES = """
CREATE FUNCTION check_new_lines_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad record;
BEGIN
    SELECT entry_id, sum(amount) AS total INTO bad
      FROM new_lines GROUP BY entry_id HAVING sum(amount) <> 0 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'journal entry % does not balance: the lines added sum to %', bad.entry_id, bad.total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$
"""

UPGRADE = [
    "DROP TRIGGER journal_lines_balanced ON journal_lines",
    "DROP TRIGGER journal_entries_balanced ON journal_entries",
    "DROP FUNCTION check_line_entry_balanced()",
    "DROP FUNCTION check_entry_balanced()",
    CHECK_NEW_ENTRIES,
    CHECK_NEW_LINES,
    "CREATE TRIGGER journal_entries_balanced AFTER INSERT ON journal_entries "
    "REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION check_new_entries_balanced()",
    "CREATE TRIGGER journal_lines_balanced AFTER INSERT ON journal_lines "
    "REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION check_new_lines_balanced()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


# The row triggers of 0001, deferred to COMMIT, as they were.
ROW_CHECKS = [
    """
CREATE FUNCTION check_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total numeric;
    lines integer;
BEGIN
    SELECT coalesce(sum(amount), 0), count(*) INTO total, lines
      FROM journal_lines WHERE entry_id = NEW.id;
    IF lines < 2 OR total <> 0 THEN
        RAISE EXCEPTION 'journal entry % does not balance: % lines summing to %', NEW.id, lines, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$
""",
    """
CREATE FUNCTION check_line_entry_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total numeric;
BEGIN
    SELECT coalesce(sum(amount), 0) INTO total FROM journal_lines WHERE entry_id = NEW.entry_id;
    IF total <> 0 THEN
        RAISE EXCEPTION 'journal entry % does not balance: lines sum to %', NEW.entry_id, total
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$
""",
    "CREATE CONSTRAINT TRIGGER journal_entries_balanced AFTER INSERT ON journal_entries "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_entry_balanced()",
    "CREATE CONSTRAINT TRIGGER journal_lines_balanced AFTER INSERT ON journal_lines "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION check_line_entry_balanced()",
]


def downgrade() -> None:
    for statement in [
        "DROP TRIGGER journal_lines_balanced ON journal_lines",
        "DROP TRIGGER journal_entries_balanced ON journal_entries",
        "DROP FUNCTION check_new_lines_balanced()",
        "DROP FUNCTION check_new_entries_balanced()",
        *ROW_CHECKS,
    ]:
        op.execute(statement)
