"""What specload asks of the machine it runs on: its usable cores and pure work over them,
Linux CPU lists, the per-user cache folder, and a standard output whose reader has gone."""
