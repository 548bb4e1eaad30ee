"""sitelens API server: ingestion, analytics queries, accounts, sites and sharing."""
