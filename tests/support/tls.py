"""A throwaway certificate authority and a server certificate for 127.0.0.1 (trustme)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the CA to trust, and the server's certificate chain and key."""

    ca: Path
    cert: Path
    key: Path


def make_tls_files(folder: Path) -> TlsFiles:
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    ca.cert_pem.write_to_path(str(files.ca))
    server.private_key_pem.write_to_path(str(files.key))
    server.cert_chain_pems[0].write_to_path(str(files.cert))
    for extra in server.cert_chain_pems[1:]:
        extra.write_to_path(str(files.cert), append=True)
    return files
