"""Loads the integration conftest (farm fixture, failure reports, skip -> exit 77) for tests
run from this directory, where pytest would not look for it."""
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
_spec = importlib.util.spec_from_file_location(
    "farm_integration_conftest", os.path.join(os.path.dirname(_HERE), "conftest.py"))
_parent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_parent)

farm = _parent.farm
pytest_runtest_makereport = _parent.pytest_runtest_makereport
pytest_sessionfinish = _parent.pytest_sessionfinish
