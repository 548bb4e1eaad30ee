"""Ingestion: from a tracker payload to a durable row of the events table.

    routes/track.py      parse the body, find the sender's address and user agent, answer
      payload.py         validate one event (per-type rules, length limits) -> TrackEvent
      fastpath.py        decode a body; a cheap check for plain events (others go to payload.py)
      pipeline.py        Ingestor: site rules, API key trust, drop rules, enrichment, write
      batch.py           the same for a whole batch: work per distinct sender and page, Arrow columns
        site_rules.py    cached per-site settings (TTL, dropped when a site changes)
        bots.py          crawlerdetect, cached
        useragent.py     ua-parser, cached; device type
        geo.py           geoip2fast bundled data or a MaxMind .mmdb
        channels.py      channel rules on label boundaries (lists in channel_lists.py)
        visitor.py       keyed visitor hash (optionally salted daily)
        sessions.py      30-minute sessions, recovered at start-up
        coalescer.py     one writer submission for all rows arriving during a log sync
      store/writer.py    a request is answered once its rows are in the synced event log; copied to DuckDB in bulk

Everything on the per-event path is cached in memory, so an event costs no database read.
"""
