"""Cursor pagination: a list call returns a page; iterating over the page (``for`` or
``async for``) yields every item of every page, fetched as the loop reaches them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Page(Generic[T]):
    """One page of a list. ``data`` is this page; ``for item in page`` walks every page."""

    def __init__(
        self,
        response: dict[str, Any],
        fetch: Callable[[str], dict[str, Any]],
        cursor_of: Callable[[T], str],
    ) -> None:
        #: The whole list object, e.g. the statement's ``totals``.
        self.response = response
        self.data: list[T] = response["data"]
        self.has_more: bool = bool(response.get("has_more"))
        self._fetch = fetch
        self._cursor_of = cursor_of

    def next_page(self) -> Page[T] | None:
        """The next page, or ``None`` after the last one."""
        if not self.has_more or not self.data:
            return None
        return Page(self._fetch(self._cursor_of(self.data[-1])), self._fetch, self._cursor_of)

    def __iter__(self) -> Iterator[T]:
        page: Page[T] | None = self
        while page is not None:
            yield from page.data
            page = page.next_page()


class AsyncPage(Generic[T]):
    """One page of a list. ``data`` is this page; ``async for item in page`` walks every page."""

    def __init__(
        self,
        response: dict[str, Any],
        fetch: Callable[[str], Awaitable[dict[str, Any]]],
        cursor_of: Callable[[T], str],
    ) -> None:
        self.response = response
        self.data: list[T] = response["data"]
        self.has_more: bool = bool(response.get("has_more"))
        self._fetch = fetch
        self._cursor_of = cursor_of

    async def next_page(self) -> AsyncPage[T] | None:
        if not self.has_more or not self.data:
            return None
        return AsyncPage(await self._fetch(self._cursor_of(self.data[-1])), self._fetch, self._cursor_of)

    async def __aiter__(self) -> AsyncIterator[T]:
        page: AsyncPage[T] | None = self
        while page is not None:
            for item in page.data:
                yield item
            page = await page.next_page()
