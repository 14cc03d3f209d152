"""A run folder's files as typed records, one declaration for their writers and readers: the
per-request record and file names (`records.py`), the manifest, a request's verification
steps binned, and the arithmetic of the workers' clock rounds."""
