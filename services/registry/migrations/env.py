from registry.models import Base
from registry.users import models as _users  # noqa: F401 - registers the people tables
from servicekit.migrations import run_env

run_env(Base.metadata)
