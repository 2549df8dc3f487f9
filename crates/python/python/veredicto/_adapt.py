"""Small adapters the extension module calls back into."""

from __future__ import annotations

from typing import Any, Awaitable


async def as_coroutine(awaitable: Awaitable[Any]) -> Any:
    """Wrap any awaitable (a Future, a Task) in a coroutine for ``asyncio.run``."""
    return await awaitable
