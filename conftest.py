from __future__ import annotations

import pytest

pytest_plugins = ["servicekit.pytest_plugin"]

STACK_LANES = 2
"""How many whole-platform modules (``tests/test_platform_*.py`` and the web app's browser
modules, each starting every service as processes) may run at once under pytest-xdist: two
cores carry two stacks beside the unit suites, not four."""


@pytest.hookimpl(tryfirst=True)  # the groups must be set before pytest-xdist reads them
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole modules go to one xdist worker (``--dist loadgroup``; their fixtures are module-
    and session-scoped), and the whole-platform modules share ``STACK_LANES`` lanes."""
    modules = sorted({item.nodeid.split("::")[0] for item in items})
    stacks = [m for m in modules if m.startswith(("tests/test_platform_", "services/web/tests/test_browser"))]
    lane = {module: f"stack-{i % STACK_LANES}" for i, module in enumerate(stacks)}
    for item in items:
        module = item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(lane.get(module, module)))
