"""Pytest fixture for the fake model provider.

Use it from a test module with `pytest_plugins = ["tests.fakes.model_fixtures"]` (or list the
module in the root conftest's `pytest_plugins`), then take `fake_model` as an argument.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.model_server import FakeModelServer


@pytest.fixture
def fake_model() -> Iterator[FakeModelServer]:
    """A running fake OpenAI/Anthropic server on 127.0.0.1; its API key is `fake.api_key`."""
    fake = FakeModelServer().start()
    try:
        yield fake
    finally:
        fake.stop()


__all__ = ["fake_model"]
