"""Pure query builders for the analytics read API: parameters in, ``Query(sql, params)`` out, no I/O.

Modules: ``window`` (time parameters), ``filters`` (filter JSON), ``scope`` (the site/window/session CTEs
every query opens with), ``buckets`` (zone-aligned buckets and gap fill), ``paging``, ``sql`` (bound
parameters), ``dialect`` (every spelling that differs between DuckDB and ClickHouse), and one builder per
endpoint family: ``goals``, ``errors``, ``metric``, ``overview``, ``usage``, ``funnels``, ``sessions``, ``live``.
The event reader (``api_backend.read``) runs what they build.

Choices where the contract leaves room (documented for the README's API section):

- A session is its in-window events; every metric measures all in-window activity of the sessions the
  filters select. Session-level values are the first non-empty value of the session (channel: the first
  non-direct channel, else the first event's; entry/exit page: first/last pageview; user: identified id,
  else visitor id), so ``metric`` counts and ``channel``/``country``/... filters always agree.
- ``regex`` filters search (unanchored, RE2); each value of a filter is ORed, negative types ANDed.
- ``percentage`` of error names is occurrences x 100 / all error occurrences (the contract's definition);
  ``metric`` percentages are a share of the window's sessions.
- Empty averages and rates over nothing (0/0) are ``null``; time-series rows without sessions carry
  ``null`` averages and zero counts.
- Bucket starts skipped by a DST jump are not listed; the repeated hour of an autumn change is one bucket.
- Goal sessions rank converted sessions by their last in-window event; ``referrer`` there is the session's
  first non-empty referrer, ``channel`` the session channel.
"""
