"""Shared fixtures: the repository root, the rack example, the CLI binary of the wheel."""

from __future__ import annotations

import os
import pathlib

import pytest

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parents[3]
RACK = ROOT / "examples" / "rack"


@pytest.fixture
def rack() -> pathlib.Path:
    return RACK


def pytest_report_header(config):
    return [f"repository: {ROOT}", f"VEREDICTO_TEST_COUNTS: {os.environ.get('VEREDICTO_TEST_COUNTS', '-')}"]
