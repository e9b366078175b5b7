"""``--search``/``--stress``: the search's candidates, one row each (status, time, resources, findings), with the
shown and the best one marked (``workbench.search.SearchResult.payload``); the viewer's Search tab draws them."""

from __future__ import annotations

from workbench.report.sections import Section

SECTION = Section(kind="search", tab="search", place="search", built_by="workbench.search.result.SearchResult.payload")
