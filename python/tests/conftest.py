"""Shared fixtures: where the repository's models are, and a compile cache
of the test run's own (so tests neither read nor fill the user's)."""
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
MODELS = REPO / "tests" / "models"


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory):
    if "XCOMP_CACHE_DIR" not in os.environ:
        os.environ["XCOMP_CACHE_DIR"] = str(tmp_path_factory.mktemp("xcomp-cache"))


@pytest.fixture(scope="session")
def models():
    return MODELS
