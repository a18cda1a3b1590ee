from notify.models import Base
from servicekit.migrations import run_env

run_env(Base.metadata)
