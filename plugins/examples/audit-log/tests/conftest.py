import pytest


@pytest.fixture(autouse=True)
def _isolated_home(kodelet_home):
    """Every test writes its audit log under a temp KODELET_HOME, never the real one."""
    return kodelet_home
