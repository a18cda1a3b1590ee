"""Official documents of assessment (notice of decision, notices, statement of account)."""
