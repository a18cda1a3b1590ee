"""The assessment service's name for :func:`servicekit.rows.from_row` (its models' mapping)."""

from servicekit.rows import from_row as from_row
