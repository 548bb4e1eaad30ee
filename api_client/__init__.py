"""sitelens Python SDK: a typed client for the read and admin API, and the server-side tracker."""
